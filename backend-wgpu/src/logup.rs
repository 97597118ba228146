//! LogUp auxiliary traces: a kernel generated per table's interactions
//! computes, per trace row, every inverse column h_j = 1 / (z - fp_j) and
//! the row's term sum_j m_j h_j in the sum column; a block scan then turns
//! that column into the running sum. Only the final sum comes back.

use crate::compose::emit_nodes;
use crate::device::{groups_for, DeviceBuffer};
use crate::{ext_of, ext_u64, shader, WgpuBackend, WgpuMatrix};
use backend_api::analysis::{column_free_values, Analysis};
use backend_api::ir::Leaf;
use backend_api::memory::TableDims;
use backend_api::{validate, Ctx, Ext, LogUp, LogUpInputs, Result, Stage, F};
use std::fmt::Write;

const SCAN: &str = include_str!("shaders/scan.wgsl");

const LOGUP_PC: &str = "struct Pc {
    main_h: u32,
    main_cpb: u32,
    fix_h: u32,
    fix_cpb: u32,
    out_h: u32,
    out_cpb: u32,
    log_n: u32,
}
var<push_constant> pc: Pc;
";

/// The LogUp kernel's WGSL body for `main` / `fix` / `out` buffer counts.
/// Constants: `z - tag_j` per interaction, then alpha^1..alpha^max_arity,
/// three words each.
pub(crate) fn generate(logup: &LogUp, main: u32, fix: u32, out: u32) -> String {
    let cs = &logup.eval;
    let a = Analysis::new(cs);
    // Interactions read no challenge: column-free nodes are constants.
    let consts = column_free_values(cs, &[], &[], &[]);
    let mut s = String::from(LOGUP_PC);
    s.push_str(&shader::reader("main", 0, main));
    if fix > 0 {
        s.push_str(&shader::reader("fix", main, fix));
    }
    let _ = writeln!(s, "@group(0) @binding({}) var<storage, read> cst: array<vec2<u32>>;", main + fix);
    s.push_str(&shader::writer("out", main + fix + 1, out));
    s.push_str(
        "fn st3(col: u32, row: u32, v: E3) {\n    st_out(col, row, v.a);\n    st_out(col + 1u, row, v.b);\n    st_out(col + 2u, row, v.c);\n}\n\
         @compute @workgroup_size(256)\n\
         fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {\n\
         \x20   let n = 1u << pc.log_n;\n    let mask = n - 1u;\n\
         \x20   let i = (wid.y * 65535u + wid.x) * 256u + tid;\n    if (i >= n) {\n        return;\n    }\n\
         \x20   let bl = 1u;\n",
    );
    let leaf = |l: Leaf| {
        let row = |offset: u32| format!("(i + {offset}u * bl) & mask");
        match l {
            Leaf::Main { col, offset } => format!("ld_main({col}u, {})", row(offset)),
            Leaf::Fixed { col, offset } => format!("ld_fix({col}u, {})", row(offset)),
            Leaf::Const(v) => lit(v),
            // Excluded by `LogUp::check`.
            _ => lit(F::ZERO),
        }
    };
    let hoisted = |i: usize| lit(consts[i].map_or(F::ZERO, |e| e.0[0]));
    emit_nodes(&mut s, cs, &a, &a.live, &leaf, &hoisted, &mut |_, _| {});
    let alphas = 3 * logup.interactions();
    let c3 = |o: usize| format!("E3(cst[{o}], cst[{}], cst[{}])", o + 1, o + 2);
    // The denominators d_j are inverted together (Montgomery's trick on
    // their norms): one f_inv a row instead of one an interaction, which
    // the driver also compiles in a fraction of the time. A zero norm
    // counts as one in the products and gives a zero inverse, as the
    // reference's batch inversion.
    let k = logup.interactions();
    for j in 0..k {
        let first = logup.first_expr(j);
        let _ = writeln!(s, "    var d{j} = {};", c3(3 * j));
        for a in 0..logup.arities[j] {
            let v = cs.constraints[first + a].node;
            let _ = writeln!(s, "    d{j} = e_sub(d{j}, e_mul_base({}, v{v}));", c3(alphas + 3 * a));
        }
        let _ = writeln!(
            s,
            "    let t{j} = e_adj(d{j});\n    let n{j} = e_norm(d{j}, t{j});\n    let z{j} = f_is_zero(n{j});\n\
             \x20   let m{j} = select(n{j}, f_one(), z{j});"
        );
        let p = if j == 0 { format!("m{j}") } else { format!("f_mul(p{}, m{j})", j - 1) };
        let _ = writeln!(s, "    let p{j} = {p};");
    }
    if k > 0 {
        let _ = writeln!(s, "    var inv = f_inv(p{});", k - 1);
    }
    // Backwards: inv is 1 / (m_0 ... m_j) on entry to step j.
    for j in (0..k).rev() {
        let before = if j == 0 { "inv".to_string() } else { format!("f_mul(inv, p{})", j - 1) };
        let _ = writeln!(s, "    let r{j} = select({before}, vec2<u32>(0u, 0u), z{j});");
        if j > 0 {
            let _ = writeln!(s, "    inv = f_mul(inv, m{j});");
        }
    }
    s.push_str("    var term = e_zero();\n");
    for j in 0..k {
        let m = cs.constraints[logup.first_expr(j) + logup.arities[j]].node;
        let _ = writeln!(
            s,
            "    let h{j} = e_mul_base(t{j}, r{j});\n    st3({}u, i, h{j});\n    term = e_add(term, e_mul_base(h{j}, v{m}));",
            3 * j
        );
    }
    let _ = writeln!(s, "    st3({}u, i, term);\n}}", 3 * k);
    s
}

fn lit(v: F) -> String {
    let x = v.value();
    format!("vec2<u32>({}u, {}u)", x as u32, (x >> 32) as u32)
}

impl WgpuBackend {
    pub(crate) fn logup(&self, ctx: &Ctx, inputs: &LogUpInputs<WgpuMatrix>) -> Result<(WgpuMatrix, Ext)> {
        let stage = Stage::LogUp;
        validate::logup_aux(inputs)?;
        let logup = inputs.logup;
        let n = inputs.main.height;
        let k = logup.interactions();
        let d = TableDims {
            fixed_width: inputs.fixed.map_or(0, |m| m.width as u64),
            aux_width: logup.aux_width() as u64,
            ..Self::dims(n.trailing_zeros(), 0, inputs.main.width)
        };
        let _permit = self.admit(stage, ctx, d)?;
        let width = 3 * logup.aux_width();
        let cpb = self.columns_per_buffer(stage, ctx, n, width)?;
        let out = self.alloc_matrix_in(stage, ctx, n, width, cpb, true)?;
        let (nm, nf, no) = (inputs.main.bufs.len(), inputs.fixed.map_or(0, |f| f.bufs.len()), out.bufs.len());
        if (nm + nf + no + 1) as u32 > self.dev.storage_per_stage || out.cpb < 3 {
            return Err(self.dev.decline(
                stage,
                ctx,
                backend_api::memory::stage_bytes(stage, &d),
                "the trace's buffers exceed the adapter's storage bindings".to_string(),
            ));
        }
        let body = generate(logup, nm as u32, nf as u32, no as u32);
        let mut writable = vec![false; nm + nf + 1];
        writable.extend(vec![true; no]);
        let kern = self.dev.kernel(stage, ctx, "logup", &shader::kernel(self.dev.int64, &body, 1), &writable)?;
        let mut cst: Vec<u64> = logup.tags.iter().flat_map(|&t| ext_u64(inputs.z - F::new(t))).collect();
        let mut pow = inputs.alpha;
        for _ in 0..logup.max_arity() {
            cst.extend(ext_u64(pow));
            pow *= inputs.alpha;
        }
        let cst = self.upload_u64(stage, ctx, &cst)?;
        let dims = |m: Option<&WgpuMatrix>| m.map_or([0, 1], |m| [m.height as u32, m.cpb as u32]);
        let mut pc: Vec<u32> = [dims(Some(inputs.main)), dims(inputs.fixed), dims(Some(&out))].concat();
        pc.push(n.trailing_zeros());
        let mut bufs: Vec<&wgpu::Buffer> = inputs.main.buffers().collect();
        if let Some(f) = inputs.fixed {
            bufs.extend(f.buffers());
        }
        bufs.push(&cst);
        bufs.extend(out.buffers());
        let mut job = self.dev.job(stage, ctx);
        job.dispatch(&kern, &bufs, &pc, groups_for(n as u64))?;
        let (sum_buf, sum_base) = out.locate(3 * k);
        let mut scratch = Vec::new();
        self.ext_scan(&mut job, stage, ctx, sum_buf, sum_base, n, &mut scratch)?;
        job.submit()?;
        let last: Vec<(&wgpu::Buffer, u64, u64)> =
            (0..3).map(|c| (sum_buf, sum_base + (c * n + n - 1) as u64, 1)).collect();
        let sum = self.dev.read(stage, ctx, &last)?;
        Ok((out, ext_of(&sum)))
    }

    /// Records an in-place inclusive prefix sum of the extension column
    /// at word `base` of `col` (three base columns of `n`): blocks scan
    /// their rows, the block totals are scanned the same way, and added
    /// back. `scratch` keeps the totals' buffers alive until submission.
    #[allow(clippy::too_many_arguments)]
    fn ext_scan(
        &self,
        job: &mut crate::device::Job,
        stage: Stage,
        ctx: &Ctx,
        col: &wgpu::Buffer,
        base: u64,
        n: usize,
        scratch: &mut Vec<DeviceBuffer>,
    ) -> Result<()> {
        const ROWS: usize = 2048;
        let k = self.dev.kernel(stage, ctx, "scan", &shader::kernel(self.dev.int64, SCAN, 1), &[true, true])?;
        let blocks = n.div_ceil(ROWS);
        let sums = self.dev.alloc(stage, ctx, 24 * blocks as u64)?;
        let pc = [0, n as u32, n as u32, base as u32, blocks as u32];
        let g = crate::device::groups_for(blocks as u64 * 256);
        job.dispatch(&k, &[col, &sums], &pc, g)?;
        if blocks > 1 {
            self.ext_scan(job, stage, ctx, &sums, 0, blocks, scratch)?;
            let pc = [1, n as u32, n as u32, base as u32, blocks as u32];
            job.dispatch(&k, &[col, &sums], &pc, groups_for(n as u64))?;
        }
        scratch.push(sums);
        Ok(())
    }
}
