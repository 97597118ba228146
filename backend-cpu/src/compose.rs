//! Constraint composition: the IR is compiled once per call into a small
//! register program over chunks of rows, then run chunk by chunk in
//! parallel.
//!
//! - Scalars (constants, publics, challenges, auxiliary values and
//!   everything built from them alone: the hoisted nodes of
//!   `backend_api::analysis`) are computed once, at compile time.
//! - A vector node lives in a base-field register unless an extension
//!   value is below it (`node_is_base`), so base sub-expressions cost base
//!   arithmetic; registers are reused once their last reader has run.
//! - Constraints are summed per vanishing domain (weighted by alpha^k) and
//!   divided once per row: 1/(x^n - 1) takes only N/n distinct values on
//!   the coset, and the single-row denominators are batch-inverted per
//!   chunk.
//! - On a piece of a coset given its next rows (`ComposeInputs::next`), a
//!   row's successor is read from those at the same row.

use crate::deep::batch_invert;
use crate::simd;
use crate::CpuMatrix;
use backend_api::analysis::{column_free_values, Analysis};
use backend_api::ext::powers;
use backend_api::{BackendError, ComposeInputs, ConstraintDomain, Ext, Leaf, Node, Result, Stage, F};
use rayon::prelude::*;

const ROWS: usize = 256;

#[derive(Clone, Copy, Debug)]
enum Val {
    BS(F),
    ES(Ext),
    BV(usize),
    EV(usize),
}

#[derive(Clone, Copy, Debug)]
enum Op {
    Add,
    Sub,
    Mul,
}

enum Instr<'a> {
    /// A base column read `shift` rows ahead (cyclically).
    LoadBase {
        out: usize,
        col: &'a [F],
        shift: usize,
    },
    /// An extension column (three coordinate columns) read `shift` rows ahead.
    LoadExt {
        out: usize,
        cols: [&'a [F]; 3],
        shift: usize,
    },
    Bin {
        op: Op,
        a: Val,
        b: Val,
        out: usize,
    },
    Neg {
        a: Val,
        out: usize,
    },
    /// acc[domain] += coef * a
    Acc {
        domain: usize,
        coef: Ext,
        a: Val,
    },
}

const TRANSITION: usize = 0;
const FIRST: usize = 1;
const LAST: usize = 2;
const ALL: usize = 3;

fn domain_slot(d: ConstraintDomain) -> usize {
    match d {
        ConstraintDomain::Transition => TRANSITION,
        ConstraintDomain::FirstRow => FIRST,
        ConstraintDomain::LastRow => LAST,
        ConstraintDomain::AllRows => ALL,
    }
}

struct Program<'a> {
    instrs: Vec<Instr<'a>>,
    base_regs: usize,
    ext_regs: usize,
    /// Sum of the constraints that folded to scalars, per domain.
    const_acc: [Ext; 4],
    used: [bool; 4],
}

fn bad(detail: String) -> BackendError {
    BackendError::invalid(Stage::Compose, detail)
}

/// Register allocator: one free list per register kind.
#[derive(Default)]
struct Regs {
    free: Vec<usize>,
    count: usize,
}

impl Regs {
    fn alloc(&mut self) -> usize {
        self.free.pop().unwrap_or_else(|| {
            self.count += 1;
            self.count - 1
        })
    }
}

fn compile<'a>(i: &ComposeInputs<'a, CpuMatrix>, n: usize, blowup: usize) -> Result<Program<'a>> {
    let cs = i.constraints;
    let nodes = &cs.nodes;
    // Liveness, last uses and the column-free (hoisted) nodes, whose values
    // are the same on every row, come from the shared analysis.
    let an = Analysis::new(cs);
    let scalars = column_free_values(cs, i.challenges, i.publics, i.aux_values);
    let alphas = powers(i.alpha, cs.constraints.len());

    let big = i.domain.size();
    let row_shift = |offset: u32| (offset as usize % n) * blowup % big;
    // A column read `offset` rows on: the same matrix shifted, or (a piece
    // given its next rows) the next rows' matrix.
    let read = |m: &'a CpuMatrix, next: Option<&'a CpuMatrix>, col: usize, offset: u32| match next {
        Some(next) if offset > 0 => (next.column(col), 0),
        _ => (m.column(col), row_shift(offset)),
    };
    let next = i.next;
    let main = i.main;
    let mut vals: Vec<Val> = Vec::with_capacity(nodes.len());
    let mut instrs = Vec::new();
    let (mut bregs, mut eregs) = (Regs::default(), Regs::default());
    let mut const_acc = [Ext::ZERO; 4];
    let mut used = [false; 4];
    for (k, node) in nodes.iter().enumerate() {
        if !an.live[k] {
            vals.push(Val::BS(F::ZERO));
            continue;
        }
        let v = match *node {
            _ if an.hoisted[k] => {
                let x = scalars[k].ok_or_else(|| bad(format!("node {k} reads a value the inputs lack")))?;
                if an.is_base[k] {
                    Val::BS(x.0[0])
                } else {
                    Val::ES(x)
                }
            }
            Node::Leaf(leaf) => match leaf {
                Leaf::Const(c) => Val::BS(c),
                Leaf::Public(c) => Val::BS(i.publics[c as usize]),
                Leaf::Challenge(c) => Val::ES(i.challenges[c as usize]),
                Leaf::AuxValue(c) => Val::ES(i.aux_values[c as usize]),
                Leaf::Main { col, offset } => {
                    let out = bregs.alloc();
                    let (col, shift) = read(main, next.map(|n| n.main), col as usize, offset);
                    instrs.push(Instr::LoadBase { out, col, shift });
                    Val::BV(out)
                }
                Leaf::Fixed { col, offset } => {
                    let fixed = i.fixed.ok_or_else(|| bad("fixed column read but no fixed LDE given".into()))?;
                    let out = bregs.alloc();
                    let (col, shift) = read(fixed, next.and_then(|n| n.fixed), col as usize, offset);
                    instrs.push(Instr::LoadBase { out, col, shift });
                    Val::BV(out)
                }
                Leaf::Aux { col, offset } => {
                    let aux = i.aux.ok_or_else(|| bad("auxiliary column read but no auxiliary LDE given".into()))?;
                    let c = 3 * col as usize;
                    let out = eregs.alloc();
                    let next = next.and_then(|n| n.aux);
                    let [(c0, shift), (c1, _), (c2, _)] = [0, 1, 2].map(|k| read(aux, next, c + k, offset));
                    instrs.push(Instr::LoadExt { out, cols: [c0, c1, c2], shift });
                    Val::EV(out)
                }
            },
            Node::Add(a, b) | Node::Sub(a, b) | Node::Mul(a, b) => {
                let op = match *node {
                    Node::Add(..) => Op::Add,
                    Node::Sub(..) => Op::Sub,
                    _ => Op::Mul,
                };
                // Not hoisted: at least one operand is a vector.
                let (va, vb) = (vals[a as usize], vals[b as usize]);
                let base = matches!(va, Val::BS(_) | Val::BV(_)) && matches!(vb, Val::BS(_) | Val::BV(_));
                let out = if base { bregs.alloc() } else { eregs.alloc() };
                instrs.push(Instr::Bin { op, a: va, b: vb, out });
                if base {
                    Val::BV(out)
                } else {
                    Val::EV(out)
                }
            }
            Node::Neg(a) => match vals[a as usize] {
                Val::BS(x) => Val::BS(-x),
                Val::ES(x) => Val::ES(-x),
                va @ Val::BV(_) => {
                    let out = bregs.alloc();
                    instrs.push(Instr::Neg { a: va, out });
                    Val::BV(out)
                }
                va @ Val::EV(_) => {
                    let out = eregs.alloc();
                    instrs.push(Instr::Neg { a: va, out });
                    Val::EV(out)
                }
            },
        };
        vals.push(v);
        for &ck in &an.roots[k] {
            let d = domain_slot(cs.constraints[ck].domain);
            used[d] = true;
            let coef = alphas[ck];
            match v {
                Val::BS(x) => const_acc[d] += coef.mul_base(x),
                Val::ES(x) => const_acc[d] += coef * x,
                _ => instrs.push(Instr::Acc { domain: d, coef, a: v }),
            }
        }
        // Free the registers whose last reader was this node.
        let mut release = |x: usize| {
            if an.last_use[x] == Some(k) {
                match vals[x] {
                    Val::BV(r) => bregs.free.push(r),
                    Val::EV(r) => eregs.free.push(r),
                    _ => {}
                }
            }
        };
        match *node {
            Node::Add(a, b) | Node::Sub(a, b) | Node::Mul(a, b) => {
                release(a as usize);
                if b != a {
                    release(b as usize);
                }
            }
            Node::Neg(a) => release(a as usize),
            Node::Leaf(_) => {}
        }
        release(k);
    }
    Ok(Program { instrs, base_regs: bregs.count, ext_regs: eregs.count, const_acc, used })
}

/// An operand as read by one instruction over one chunk.
#[derive(Clone, Copy)]
enum Opd<'a> {
    BV(&'a [F]),
    BS(F),
    EV(&'a [Ext]),
    ES(Ext),
}

fn operand<'a>(v: Val, base: &'a [Vec<F>], ext: &'a [Vec<Ext>], len: usize) -> Opd<'a> {
    match v {
        Val::BS(x) => Opd::BS(x),
        Val::ES(x) => Opd::ES(x),
        Val::BV(r) => Opd::BV(&base[r][..len]),
        Val::EV(r) => Opd::EV(&ext[r][..len]),
    }
}

/// Arithmetic between any mix of base and extension values, with the
/// cheap mixed forms (3 multiplications for base x extension).
trait Arith<R>: Copy {
    type Out: Copy;
    fn op(self, op: Op, r: R) -> Self::Out;
}

impl Arith<F> for F {
    type Out = F;
    #[inline(always)]
    fn op(self, op: Op, r: F) -> F {
        match op {
            Op::Add => self + r,
            Op::Sub => self - r,
            Op::Mul => self * r,
        }
    }
}

impl Arith<Ext> for F {
    type Out = Ext;
    #[inline(always)]
    fn op(self, op: Op, r: Ext) -> Ext {
        match op {
            Op::Add => r.add_base(self),
            Op::Sub => Ext([self - r.0[0], -r.0[1], -r.0[2]]),
            Op::Mul => r.mul_base(self),
        }
    }
}

impl Arith<F> for Ext {
    type Out = Ext;
    #[inline(always)]
    fn op(self, op: Op, r: F) -> Ext {
        match op {
            Op::Add => self.add_base(r),
            Op::Sub => self - r,
            Op::Mul => self.mul_base(r),
        }
    }
}

impl Arith<Ext> for Ext {
    type Out = Ext;
    #[inline(always)]
    fn op(self, op: Op, r: Ext) -> Ext {
        match op {
            Op::Add => self + r,
            Op::Sub => self - r,
            Op::Mul => self * r,
        }
    }
}

/// out[t] = a[t] op b[t]; the op is matched outside the loop so each loop
/// body is branch-free.
#[inline(always)]
fn bin_vv<A: Arith<B>, B: Copy>(op: Op, out: &mut [A::Out], a: &[A], b: &[B]) {
    macro_rules! run {
        ($o:expr) => {
            for ((o, &x), &y) in out.iter_mut().zip(a).zip(b) {
                *o = x.op($o, y);
            }
        };
    }
    match op {
        Op::Add => run!(Op::Add),
        Op::Sub => run!(Op::Sub),
        Op::Mul => run!(Op::Mul),
    }
}

#[inline(always)]
fn bin_vs<A: Arith<B>, B: Copy>(op: Op, out: &mut [A::Out], a: &[A], b: B) {
    macro_rules! run {
        ($o:expr) => {
            for (o, &x) in out.iter_mut().zip(a) {
                *o = x.op($o, b);
            }
        };
    }
    match op {
        Op::Add => run!(Op::Add),
        Op::Sub => run!(Op::Sub),
        Op::Mul => run!(Op::Mul),
    }
}

#[inline(always)]
fn bin_sv<A: Arith<B>, B: Copy>(op: Op, out: &mut [A::Out], a: A, b: &[B]) {
    macro_rules! run {
        ($o:expr) => {
            for (o, &y) in out.iter_mut().zip(b) {
                *o = a.op($o, y);
            }
        };
    }
    match op {
        Op::Add => run!(Op::Add),
        Op::Sub => run!(Op::Sub),
        Op::Mul => run!(Op::Mul),
    }
}

/// Per-thread working memory.
struct Scratch {
    base: Vec<Vec<F>>,
    ext: Vec<Vec<Ext>>,
    acc: [Vec<Ext>; 4],
    xs: Vec<F>,
    inv_first: Vec<F>,
    inv_last: Vec<F>,
    tmp: Vec<F>,
}

impl Scratch {
    fn new(p: &Program, rows: usize) -> Scratch {
        Scratch {
            base: vec![vec![F::ZERO; rows]; p.base_regs],
            ext: vec![vec![Ext::ZERO; rows]; p.ext_regs],
            acc: std::array::from_fn(|d| if p.used[d] { vec![Ext::ZERO; rows] } else { Vec::new() }),
            xs: vec![F::ZERO; rows],
            inv_first: vec![F::ZERO; rows],
            inv_last: vec![F::ZERO; rows],
            tmp: Vec::with_capacity(rows),
        }
    }
}

/// Rows r0.. of the domain (`big` points), whose point r is row r << ls of
/// the matrices.
fn run_chunk(p: &Program, s: &mut Scratch, r0: usize, len: usize, big: usize, ls: u32) {
    for d in 0..4 {
        if p.used[d] {
            s.acc[d][..len].fill(p.const_acc[d]);
        }
    }
    let mask = big - 1;
    for ins in &p.instrs {
        match *ins {
            Instr::LoadBase { out, col, shift } if ls == 0 => {
                let dst = &mut s.base[out][..len];
                let start = (r0 + shift) & mask;
                let first = len.min(big - start);
                dst[..first].copy_from_slice(&col[start..start + first]);
                dst[first..].copy_from_slice(&col[..len - first]);
            }
            Instr::LoadBase { out, col, shift } => {
                for (t, d) in s.base[out][..len].iter_mut().enumerate() {
                    *d = col[((r0 + shift + t) & mask) << ls];
                }
            }
            Instr::LoadExt { out, cols, shift } => {
                let dst = &mut s.ext[out][..len];
                for (t, e) in dst.iter_mut().enumerate() {
                    let r = ((r0 + shift + t) & mask) << ls;
                    *e = Ext([cols[0][r], cols[1][r], cols[2][r]]);
                }
            }
            Instr::Bin { op, a, b, out } => {
                let both_base = matches!(a, Val::BS(_) | Val::BV(_)) && matches!(b, Val::BS(_) | Val::BV(_));
                if both_base {
                    let mut o = std::mem::take(&mut s.base[out]);
                    let (x, y) = (operand(a, &s.base, &s.ext, len), operand(b, &s.base, &s.ext, len));
                    let o_ = &mut o[..len];
                    let (a, b, k) = match (x, y) {
                        (Opd::BV(x), Opd::BV(y)) => (Some(x), Some(y), F::ZERO),
                        (Opd::BV(x), Opd::BS(y)) => (Some(x), None, y),
                        (Opd::BS(x), Opd::BV(y)) => (None, Some(y), x),
                        _ => (None, None, F::ZERO),
                    };
                    // Base-field ops run on eight lanes where the host can.
                    if a.is_some() || b.is_some() {
                        match op {
                            Op::Add => simd::binop::<{ simd::ADD }>(o_, a, b, k),
                            Op::Sub => simd::binop::<{ simd::SUB }>(o_, a, b, k),
                            Op::Mul => simd::binop::<{ simd::MUL }>(o_, a, b, k),
                        }
                    }
                    s.base[out] = o;
                } else {
                    let mut o = std::mem::take(&mut s.ext[out]);
                    let (x, y) = (operand(a, &s.base, &s.ext, len), operand(b, &s.base, &s.ext, len));
                    let o_ = &mut o[..len];
                    match (x, y) {
                        (Opd::BV(x), Opd::EV(y)) => bin_vv(op, o_, x, y),
                        (Opd::BV(x), Opd::ES(y)) => bin_vs(op, o_, x, y),
                        (Opd::BS(x), Opd::EV(y)) => bin_sv(op, o_, x, y),
                        (Opd::EV(x), Opd::BV(y)) => bin_vv(op, o_, x, y),
                        (Opd::EV(x), Opd::BS(y)) => bin_vs(op, o_, x, y),
                        (Opd::ES(x), Opd::BV(y)) => bin_sv(op, o_, x, y),
                        (Opd::EV(x), Opd::EV(y)) => bin_vv(op, o_, x, y),
                        (Opd::EV(x), Opd::ES(y)) => bin_vs(op, o_, x, y),
                        (Opd::ES(x), Opd::EV(y)) => bin_sv(op, o_, x, y),
                        _ => {}
                    }
                    s.ext[out] = o;
                }
            }
            Instr::Neg { a, out } => match a {
                Val::BV(r) => {
                    let mut o = std::mem::take(&mut s.base[out]);
                    o[..len].iter_mut().zip(&s.base[r][..len]).for_each(|(o, &x)| *o = -x);
                    s.base[out] = o;
                }
                Val::EV(r) => {
                    let mut o = std::mem::take(&mut s.ext[out]);
                    o[..len].iter_mut().zip(&s.ext[r][..len]).for_each(|(o, &x)| *o = -x);
                    s.ext[out] = o;
                }
                _ => {}
            },
            Instr::Acc { domain, coef, a } => {
                let acc = &mut s.acc[domain][..len];
                match a {
                    Val::BV(r) => acc.iter_mut().zip(&s.base[r][..len]).for_each(|(o, &x)| *o += coef.mul_base(x)),
                    Val::EV(r) => acc.iter_mut().zip(&s.ext[r][..len]).for_each(|(o, &x)| *o += coef * x),
                    _ => {}
                }
            }
        }
    }
}

pub(crate) fn compose(i: &ComposeInputs<CpuMatrix>) -> Result<CpuMatrix> {
    let big = i.domain.size();
    let log_n = i.log_trace_height;
    let n = 1usize << log_n;
    // x^n - 1 on a whole LDE coset is shift^n * w_B^(i mod B) - 1; on a
    // piece (no larger than the trace) it is one value.
    let log_b = i.domain.log_size.saturating_sub(log_n);
    let blowup = 1usize << log_b;
    let shift = i.domain.shift;
    let w_b = F::two_adic_root(log_b);
    let s_n = shift.pow(n as u64);
    let mut zh: Vec<F> = (0..blowup).map(|j| s_n * w_b.pow(j as u64) - F::ONE).collect();
    if zh.iter().any(|v| v.is_zero()) {
        // Then some x has x^n = 1, so every divisor vanishes somewhere.
        return Err(bad("the domain meets the trace subgroup; quotients are undefined there".into()));
    }
    let mut tmp = Vec::new();
    batch_invert(&mut zh, &mut tmp);
    let zh_inv = zh;
    let last_point = F::two_adic_root(log_n).pow(n as u64 - 1);

    let prog = compile(i, n, blowup)?;
    let g = i.domain.generator();
    let chunk = ROWS.min(big);
    let mut out = crate::zeroed(3 * big);
    let (o0, rest) = out.split_at_mut(big);
    let (o1, o2) = rest.split_at_mut(big);
    o0.par_chunks_mut(chunk).zip(o1.par_chunks_mut(chunk)).zip(o2.par_chunks_mut(chunk)).enumerate().for_each_init(
        || Scratch::new(&prog, chunk),
        |s, (ci, ((c0, c1), c2))| {
            let r0 = ci * chunk;
            let len = c0.len();
            run_chunk(&prog, s, r0, len, big, i.log_stride);
            let mut x = shift * g.pow(r0 as u64);
            for v in &mut s.xs[..len] {
                *v = x;
                x *= g;
            }
            if prog.used[FIRST] {
                s.inv_first[..len].iter_mut().zip(&s.xs[..len]).for_each(|(d, &x)| *d = x - F::ONE);
                batch_invert(&mut s.inv_first[..len], &mut s.tmp);
            }
            if prog.used[LAST] {
                s.inv_last[..len].iter_mut().zip(&s.xs[..len]).for_each(|(d, &x)| *d = x - last_point);
                batch_invert(&mut s.inv_last[..len], &mut s.tmp);
            }
            for t in 0..len {
                let x = s.xs[t];
                // Transition and all-row sums share 1/(x^n - 1).
                let mut vanish = Ext::ZERO;
                if prog.used[ALL] {
                    vanish = s.acc[ALL][t];
                }
                if prog.used[TRANSITION] {
                    vanish += s.acc[TRANSITION][t].mul_base(x - last_point);
                }
                let mut q = vanish.mul_base(zh_inv[(r0 + t) % blowup]);
                if prog.used[FIRST] {
                    q += s.acc[FIRST][t].mul_base(s.inv_first[t]);
                }
                if prog.used[LAST] {
                    q += s.acc[LAST][t].mul_base(s.inv_last[t]);
                }
                c0[t] = q.0[0];
                c1[t] = q.0[1];
                c2[t] = q.0[2];
            }
        },
    );
    Ok(CpuMatrix::from_data(3, big, out))
}
