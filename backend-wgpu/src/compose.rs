//! Constraint composition: a WGSL kernel generated per constraint system
//! (and per buffer split of its inputs) from `backend_api::analysis`: one
//! invocation per LDE row, every live node a `let` (base-field nodes with
//! base arithmetic), nodes that read no column (hoisted) read from the
//! constant buffer, each constraint added to its domain's sum right after
//! its node. Generated rather than interpreted, as on CUDA, where the
//! generated kernel was faster on every AIR measured; WGSL has no
//! overloading, so the generator picks the base or extension form of every
//! operation from the analysis.

use crate::device::groups_for;
use crate::{ext_u64, invalid, shader, words, WgpuBackend, WgpuMatrix};
use backend_api::analysis::{self, column_free_values, Analysis};
use backend_api::ir::{ConstraintDomain, ConstraintSystem, Leaf, Node};
use backend_api::memory::TableDims;
use backend_api::{validate, ComposeInputs, Ctx, Ext, Result, Stage, F};
use std::fmt::Write;

/// Where the constant buffer keeps each kind of value (offsets in u64).
pub(crate) struct ConstLayout {
    pub challenges: usize,
    pub aux_values: usize,
    pub publics: usize,
    pub alphas: usize,
    /// Per node: its slot (3 words) when hoisted and live.
    pub hoisted: Vec<Option<usize>>,
    pub len: usize,
}

pub(crate) fn const_layout(cs: &ConstraintSystem, a: &Analysis) -> ConstLayout {
    let l = &cs.layout;
    let aux_values = 3 * l.num_challenges;
    let publics = aux_values + 3 * l.num_aux_values;
    let alphas = publics + l.num_public;
    let mut len = alphas + 3 * cs.constraints.len();
    let hoisted = (0..cs.nodes.len())
        .map(|i| {
            (a.hoisted[i] && a.live[i]).then(|| {
                len += 3;
                len - 3
            })
        })
        .collect();
    ConstLayout { challenges: 0, aux_values, publics, alphas, hoisted, len }
}

fn lit(v: F) -> String {
    let [lo, hi] = words(v.value());
    format!("vec2<u32>({lo}u, {hi}u)")
}

fn cst_base(o: usize) -> String {
    format!("cst[{o}]")
}

fn cst_ext(o: usize) -> String {
    format!("E3(cst[{o}], cst[{}], cst[{}])", o + 1, o + 2)
}

/// `a op b` in the form the operand types need.
fn binop(op: char, a: (String, bool), b: (String, bool)) -> String {
    let ((x, xb), (y, yb)) = (a, b);
    match (op, xb, yb) {
        ('+', true, true) => format!("f_add({x}, {y})"),
        ('+', false, false) => format!("e_add({x}, {y})"),
        ('+', false, true) => format!("e_add_base({x}, {y})"),
        ('+', true, false) => format!("e_add_base({y}, {x})"),
        ('-', true, true) => format!("f_sub({x}, {y})"),
        ('-', false, false) => format!("e_sub({x}, {y})"),
        ('-', false, true) => format!("e_sub_base({x}, {y})"),
        ('-', true, false) => format!("base_sub_e({x}, {y})"),
        (_, true, true) => format!("f_mul({x}, {y})"),
        (_, false, false) => format!("e_mul({x}, {y})"),
        (_, false, true) => format!("e_mul_base({x}, {y})"),
        (_, true, false) => format!("e_mul_base({y}, {x})"),
    }
}

/// Every live node as `let v{i}`; `leaf` gives a trace leaf's expression,
/// `hoisted` a hoisted node's, and `after` runs once a node is defined.
pub(crate) fn emit_nodes(
    s: &mut String,
    cs: &ConstraintSystem,
    a: &Analysis,
    live: &[bool],
    leaf: &dyn Fn(Leaf) -> String,
    hoisted: &dyn Fn(usize) -> String,
    after: &mut dyn FnMut(&mut String, usize),
) {
    for (i, node) in cs.nodes.iter().enumerate() {
        if !live[i] {
            continue;
        }
        let v = |x: u32| (format!("v{x}"), a.is_base[x as usize]);
        let expr = match *node {
            _ if a.hoisted[i] => hoisted(i),
            Node::Leaf(l) => leaf(l),
            Node::Add(x, y) => binop('+', v(x), v(y)),
            Node::Sub(x, y) => binop('-', v(x), v(y)),
            Node::Mul(x, y) => binop('*', v(x), v(y)),
            Node::Neg(x) => format!("{}({})", if a.is_base[x as usize] { "f_neg" } else { "e_neg" }, v(x).0),
        };
        let _ = writeln!(s, "    let v{i} = {expr};");
        after(s, i);
    }
}

/// A trace leaf read through the readers `ld_main`, `ld_fix` and `ld_aux`
/// at point `(i + offset * B) & mask`, or (a piece given its next rows) past
/// offset 0 through `ld_mainn`, `ld_fixn` and `ld_auxn` at point i; point
/// i is row i << log_stride of the matrices.
fn trace_leaf(l: Leaf, next: bool) -> Option<String> {
    let read = |name: &str, col: u32, offset: u32| match offset {
        0 => format!("ld_{name}({col}u, i << pc.log_stride)"),
        _ if next => format!("ld_{name}n({col}u, i << pc.log_stride)"),
        _ => format!("ld_{name}({col}u, ((i + {offset}u * bl) & mask) << pc.log_stride)"),
    };
    Some(match l {
        Leaf::Main { col, offset } => read("main", col, offset),
        Leaf::Fixed { col, offset } => read("fix", col, offset),
        Leaf::Aux { col, offset } => {
            let c = 3 * col;
            format!("E3({}, {}, {})", read("aux", c, offset), read("aux", c + 1, offset), read("aux", c + 2, offset))
        }
        Leaf::Const(v) => lit(v),
        _ => return None,
    })
}

const GROUPS: [(ConstraintDomain, &str); 4] = [
    (ConstraintDomain::AllRows, "g_all"),
    (ConstraintDomain::Transition, "g_tr"),
    (ConstraintDomain::FirstRow, "g_first"),
    (ConstraintDomain::LastRow, "g_last"),
];

/// Buffer counts of the main, auxiliary and fixed inputs, and whether
/// their next rows come as matrices of the same shapes.
#[derive(Clone, Copy)]
pub(crate) struct Split {
    pub main: u32,
    pub aux: u32,
    pub fix: u32,
    pub next: bool,
}

impl Split {
    fn bindings(&self) -> u32 {
        (self.main + self.aux + self.fix) * (1 + u32::from(self.next))
    }
}

const COMPOSE_PC: &str = "struct Pc {
    main_h: u32,
    main_cpb: u32,
    aux_h: u32,
    aux_cpb: u32,
    fix_h: u32,
    fix_cpb: u32,
    log_big: u32,
    log_blowup: u32,
    tw_log: u32,
    log_stride: u32,
    shift: vec2<u32>,
    g_inv: vec2<u32>,
}
var<push_constant> pc: Pc;
";

/// Most nodes one composition kernel computes per row: the driver's
/// compile time grows faster than a kernel's length (on the H200 the first
/// prove of the 2^20-cycle program spent 46 s compiling its one kernel per
/// table), so a system is split into parts of about this many nodes, each
/// a kernel of its own, run one after another.
const PART_NODES: usize = 96;

/// The composition kernels' WGSL bodies (the field library goes in front),
/// one per part of the constraints ([`analysis::parts`]). The first part
/// stores its quotient values, every later one adds its own to them: field
/// addition is exact, so the sum is the same element whatever the split.
pub(crate) fn generate(cs: &ConstraintSystem, split: Split) -> Vec<String> {
    let a = Analysis::new(cs);
    let cl = const_layout(cs, &a);
    let given = |i: usize| a.hoisted[i];
    analysis::parts(cs, PART_NODES, &given)
        .iter()
        .enumerate()
        .map(|(p, ks)| {
            let mut live = vec![false; cs.nodes.len()];
            for &k in ks {
                analysis::mark_cone(cs, cs.constraints[k].node as usize, &given, &mut live);
            }
            generate_part(cs, &a, &cl, split, (ks, &live), p == 0)
        })
        .collect()
}

/// One kernel: the nodes the constraints `ks` need (`live`), their sums
/// per domain, and the quotient they contribute, stored (`first`) or added.
fn generate_part(
    cs: &ConstraintSystem,
    a: &Analysis,
    cl: &ConstLayout,
    split: Split,
    (ks, live): (&[usize], &[bool]),
    first: bool,
) -> String {
    let mut s = String::from(COMPOSE_PC);
    emit_bindings(&mut s, split);
    emit_entry(&mut s);
    let leaf = |l: Leaf| {
        trace_leaf(l, split.next).unwrap_or_else(|| match l {
            Leaf::Challenge(k) => cst_ext(cl.challenges + 3 * k as usize),
            Leaf::AuxValue(k) => cst_ext(cl.aux_values + 3 * k as usize),
            Leaf::Public(k) => cst_base(cl.publics + k as usize),
            _ => unreachable!("trace leaves handled above"),
        })
    };
    let hoisted = |i: usize| {
        let o = cl.hoisted[i].expect("live hoisted nodes have a slot");
        if a.is_base[i] {
            cst_base(o)
        } else {
            cst_ext(o)
        }
    };
    emit_nodes(&mut s, cs, a, live, &leaf, &hoisted, &mut |s, node| {
        for &k in a.roots[node].iter().filter(|k| ks.contains(k)) {
            let c = &cs.constraints[k];
            let name = GROUPS.iter().find(|g| g.0 == c.domain).map(|g| g.1).expect("all domains listed");
            let term = binop('*', (cst_ext(cl.alphas + 3 * k), false), (format!("v{node}"), a.is_base[node]));
            let _ = writeln!(s, "    {name} = e_add({name}, {term});");
        }
    });
    emit_quotient(&mut s, cs, ks, first);
    s
}

/// The bindings in order: readers of the main, auxiliary and fixed
/// buffers, then (given) of their next rows, then the constants, the
/// values of 1 / (x^n - 1), the twiddles and the output.
fn emit_bindings(s: &mut String, split: Split) {
    let mut b = 0;
    for (name, count) in [("main", split.main), ("aux", split.aux), ("fix", split.fix)] {
        if count > 0 {
            s.push_str(&shader::reader(name, b, count));
            b += count;
        }
    }
    if split.next {
        for (name, count) in [("main", split.main), ("aux", split.aux), ("fix", split.fix)] {
            if count > 0 {
                s.push_str(&shader::reader_shaped_as(&format!("{name}n"), name, b, count));
                b += count;
            }
        }
    }
    for (name, w) in [("cst", false), ("zinv", false), ("tw", false), ("out", true)] {
        let access = if w { "read_write" } else { "read" };
        let _ = writeln!(s, "@group(0) @binding({b}) var<storage, {access}> {name}: array<vec2<u32>>;");
        b += 1;
    }
}

/// The field library's marker, then the entry point up to its first node:
/// the row (none past the domain) and a zero sum per constraint domain.
fn emit_entry(s: &mut String) {
    s.push_str("// COMMON\n");
    s.push_str(
        "@compute @workgroup_size(256)\n\
         fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {\n\
         \x20   let n_big = 1u << pc.log_big;\n    let mask = n_big - 1u;\n\
         \x20   let i = (wid.y * 65535u + wid.x) * 256u + tid;\n    if (i >= n_big) {\n        return;\n    }\n\
         \x20   let bl = 1u << pc.log_blowup;\n",
    );
    for (_, name) in GROUPS {
        let _ = writeln!(s, "    var {name} = e_zero();");
    }
}

/// Divides each domain's sum (of the constraints `ks`) by its vanishing
/// polynomial at x and stores the quotient at row i (`store`), or adds it
/// to what is there.
fn emit_quotient(s: &mut String, cs: &ConstraintSystem, ks: &[usize], store: bool) {
    let has = |d: ConstraintDomain| ks.iter().any(|&k| cs.constraints[k].domain == d);
    let (all, tr, first, last) = (
        has(ConstraintDomain::AllRows),
        has(ConstraintDomain::Transition),
        has(ConstraintDomain::FirstRow),
        has(ConstraintDomain::LastRow),
    );
    s.push_str("    var q = e_zero();\n    let x = f_mul(pc.shift, root_pow(pc.log_big, i));\n");
    if all || tr {
        s.push_str("    let za = zinv[i & (bl - 1u)];\n");
    }
    if all {
        s.push_str("    q = e_add(q, e_mul_base(g_all, za));\n");
    }
    if tr {
        s.push_str("    q = e_add(q, e_mul_base(g_tr, f_mul(f_sub(x, pc.g_inv), za)));\n");
    }
    if first && last {
        s.push_str(
            "    let d1 = f_sub(x, f_one());\n    let d2 = f_sub(x, pc.g_inv);\n    let dinv = f_inv(f_mul(d1, d2));\n\
             \x20   q = e_add(q, e_mul_base(g_first, f_mul(dinv, d2)));\n\
             \x20   q = e_add(q, e_mul_base(g_last, f_mul(dinv, d1)));\n",
        );
    } else if first {
        s.push_str("    q = e_add(q, e_mul_base(g_first, f_inv(f_sub(x, f_one()))));\n");
    } else if last {
        s.push_str("    q = e_add(q, e_mul_base(g_last, f_inv(f_sub(x, pc.g_inv))));\n");
    }
    if !store {
        s.push_str("    q = e_add(q, E3(out[i], out[n_big + i], out[2u * n_big + i]));\n");
    }
    s.push_str("    out[i] = q.a;\n    out[n_big + i] = q.b;\n    out[2u * n_big + i] = q.c;\n}\n");
}

/// The constant buffer: challenges, auxiliary values, publics, alpha^k,
/// then the values of the live hoisted nodes.
fn constants(i: &ComposeInputs<WgpuMatrix>, cl: &ConstLayout) -> Vec<u64> {
    let cs = i.constraints;
    let mut cst = vec![0u64; cl.len.max(1)];
    for (k, c) in i.challenges.iter().enumerate() {
        cst[cl.challenges + 3 * k..][..3].copy_from_slice(&ext_u64(*c));
    }
    for (k, c) in i.aux_values.iter().enumerate() {
        cst[cl.aux_values + 3 * k..][..3].copy_from_slice(&ext_u64(*c));
    }
    for (k, p) in i.publics.iter().enumerate() {
        cst[cl.publics + k] = p.value();
    }
    let mut a = Ext::ONE;
    for k in 0..cs.constraints.len() {
        cst[cl.alphas + 3 * k..][..3].copy_from_slice(&ext_u64(a));
        a *= i.alpha;
    }
    let vals = column_free_values(cs, i.challenges, i.publics, i.aux_values);
    for (o, v) in cl.hoisted.iter().zip(vals) {
        if let (Some(o), Some(v)) = (o, v) {
            cst[*o..*o + 3].copy_from_slice(&ext_u64(v));
        }
    }
    cst
}

impl WgpuBackend {
    pub(crate) fn compose_quotient(&self, ctx: &Ctx, inputs: &ComposeInputs<WgpuMatrix>) -> Result<WgpuMatrix> {
        let stage = Stage::Compose;
        validate::compose(inputs)?;
        let cs = inputs.constraints;
        let (log_big, log_n) = (inputs.domain.log_size, inputs.log_trace_height);
        // A piece given its next rows is no larger than the trace: one
        // value of 1 / (x^n - 1), and its own rows.
        let log_blowup = log_big.saturating_sub(log_n);
        let d = TableDims {
            fixed_width: inputs.fixed.map_or(0, |m| m.width as u64),
            aux_width: inputs.aux.map_or(0, |m| m.width as u64).div_ceil(3),
            ..Self::dims(log_big - log_blowup, log_blowup, inputs.main.width)
        };
        let _permit = self.admit(stage, ctx, d)?;
        let big = inputs.domain.size();
        let count = |m: Option<&WgpuMatrix>| m.map_or(0, |m| m.bufs.len() as u32);
        let split = Split {
            main: count(Some(inputs.main)),
            aux: count(inputs.aux),
            fix: count(inputs.fixed),
            next: inputs.next.is_some(),
        };
        let bindings = split.bindings() + 4;
        if bindings > self.dev.storage_per_stage {
            return Err(self.dev.decline(
                stage,
                ctx,
                backend_api::memory::stage_bytes(stage, &d),
                format!("{bindings} buffers exceed the adapter's {} storage bindings", self.dev.storage_per_stage),
            ));
        }
        let tw = self.twiddles(stage, ctx, log_big)?;
        let mut writable = vec![false; bindings as usize - 1];
        writable.push(true);
        let sources: Vec<String> =
            generate(cs, split).iter().map(|body| shader::kernel(self.dev.int64, body, 1)).collect();
        let kernels = self.dev.kernels(
            stage,
            ctx,
            "compose",
            &sources.iter().map(String::as_str).collect::<Vec<_>>(),
            &writable,
        )?;
        let cl = const_layout(cs, &Analysis::new(cs));
        let cst = self.upload_u64(stage, ctx, &constants(inputs, &cl))?;
        // 1 / (x^n - 1) takes 2^log_blowup values on the coset: x^n = s^n w_B^j.
        let shift = inputs.domain.shift;
        let sn = shift.pow(1u64 << log_n);
        let wb = F::two_adic_root(log_blowup);
        let zinv: Vec<u64> =
            (0..1u64 << log_blowup).map(|j| (sn * wb.pow(j) - F::ONE).inverse().unwrap_or(F::ZERO).value()).collect();
        let zinv = self.upload_u64(stage, ctx, &zinv)?;
        let g_inv = F::two_adic_root(log_n).inverse().ok_or_else(|| invalid(stage, "root of unity is zero"))?;
        let out = self.alloc_matrix(stage, ctx, big, 3)?;
        let obuf = out.single(&self.dev, stage, ctx)?;
        let dims = |m: Option<&WgpuMatrix>| m.map_or([0, 1], |m| [m.height as u32, m.cpb as u32]);
        let mut pc: Vec<u32> = [dims(Some(inputs.main)), dims(inputs.aux), dims(inputs.fixed)].concat();
        pc.extend([log_big, log_blowup, tw.log]);
        pc.push(inputs.log_stride); // also aligns the vec2 after it
        pc.extend(words(shift.value()));
        pc.extend(words(g_inv.value()));
        let mut bufs: Vec<&wgpu::Buffer> = inputs.main.buffers().collect();
        for m in [inputs.aux, inputs.fixed].into_iter().flatten() {
            bufs.extend(m.buffers());
        }
        if let Some(next) = inputs.next {
            for m in [Some(next.main), next.aux, next.fixed].into_iter().flatten() {
                bufs.extend(m.buffers());
            }
        }
        bufs.extend([&cst, &zinv, &tw.fwd, obuf]);
        // The parts in order: the first stores, the rest add.
        let mut job = self.dev.job(stage, ctx);
        for k in &kernels {
            job.dispatch(k, &bufs, &pc, groups_for(big as u64))?;
        }
        job.submit()?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_system_is_composed_by_parts_of_which_only_the_first_stores() {
        use stark::Air;
        let cubic = stark::examples::Cubic::new(64);
        let cs = cubic.constraints();
        let split = Split { main: 1, aux: 0, fix: 0, next: false };
        let sources = generate(cs, split);
        assert!(sources.len() > 2, "{} nodes in {} part(s)", cs.nodes.len(), sources.len());
        let add = "q = e_add(q, E3(out[i]";
        assert!(!sources[0].contains(add));
        assert!(sources[1..].iter().all(|s| s.contains(add)));
        // Every constraint's alpha is read by exactly one part.
        for k in 0..cs.constraints.len() {
            let cl = const_layout(cs, &Analysis::new(cs));
            let alpha = cst_ext(cl.alphas + 3 * k);
            assert_eq!(sources.iter().filter(|s| s.contains(&alpha)).count(), 1, "constraint {k}");
        }
    }
}
