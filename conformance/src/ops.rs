//! Operation-by-operation comparison against the CPU reference.

use crate::inputs::{case_seed, rand_ext, rand_exts, rand_f, rand_felts, rand_matrix, rng, rows_label, CaseRng};
use crate::{SuiteConfig, SuiteReport};
use backend_api::hash::hash_leaf;
use backend_api::{
    Backend, BackendBase, BackendError, ColMatrix, ComposeInputs, ComposeOps, ConstraintBuilder, ConstraintSystem,
    Coset, Ctx, DeepColumns, DeepOps, DeepPoint, DeviceMatrix, DeviceTree, Expr, Ext, FriOps, HashKind, Interaction,
    Layout, Leaf, LogUp, LogUpInputs, LogUpOps, MerkleOps, NextRows, Node, NttOps, F, GENERATOR,
};
use backend_cpu::cross_check::first_difference;
use backend_cpu::{CpuBackend, CpuMatrix};
use rand::Rng;
use stark::examples::{Cubic, Fibonacci, Permutation, TwoTables};
use stark::Machine;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// One DEEP point: z and, per matrix index, its coefficients and values.
type DeepSpec = (backend_api::Ext, Vec<(usize, Vec<backend_api::Ext>, Vec<backend_api::Ext>)>);

/// The context every direct operation call of the suite runs under.
pub const CTX: Ctx<'static> = Ctx::table("conformance");

/// The backend under test, the reference, and the report being filled.
pub(crate) struct Checker<'a, B: Backend> {
    pub b: &'a B,
    pub cpu: &'a CpuBackend,
    pub cfg: &'a SuiteConfig,
    pub report: &'a mut SuiteReport,
}

/// Why a panic happened, as text.
pub(crate) fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-string panic".into())
}

/// Compares a backend's host copy with the reference's, naming the first
/// differing element.
pub(crate) fn same_host(got: &ColMatrix, want: &ColMatrix) -> Result<(), String> {
    if (got.height(), got.width()) != (want.height(), want.width()) {
        return Err(format!("shape {}x{}, reference {}x{}", got.height(), got.width(), want.height(), want.width()));
    }
    match first_difference(got, want) {
        None => Ok(()),
        Some((c, r)) => Err(format!("column {c}, row {r}: {} vs reference {}", got.get(r, c), want.get(r, c))),
    }
}

/// `same_host` for gathered rows: row i is the i-th row asked.
fn same_rows(got: &[Vec<F>], want: &[Vec<F>]) -> Result<(), String> {
    let width = want.first().map_or(0, Vec::len);
    if got.len() != want.len() || got.iter().any(|r| r.len() != width) {
        return Err(format!("{} rows (not all of {width} columns?), reference {}x{width}", got.len(), want.len()));
    }
    let columns =
        |rows: &[Vec<F>]| ColMatrix::from_columns((0..width).map(|c| rows.iter().map(|r| r[c]).collect()).collect());
    same_host(&columns(got), &columns(want))
}

fn hex(d: &[u8]) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// Heights tried for operations whose input is a trace (compose, split):
/// every small height, then every other one up to max_log - 2.
/// Rows first, first + 2^log_step, ... of `m`.
fn rows_of(m: &ColMatrix, first: usize, log_step: u32) -> ColMatrix {
    let (w, h) = (m.width(), m.height() >> log_step);
    let data = (0..w).flat_map(|c| (0..h).map(move |k| m.get(first + (k << log_step), c))).collect();
    ColMatrix::new(w, h, data)
}

/// `m` with its rows rotated up by `by`: row i is row (i + by) mod height.
fn rotated(m: &ColMatrix, by: usize) -> ColMatrix {
    let (w, h) = (m.width(), m.height());
    ColMatrix::new(w, h, (0..w).flat_map(|c| (0..h).map(move |i| m.get((i + by) % h, c))).collect())
}

/// The largest row offset the constraints read.
fn max_offset(cs: &ConstraintSystem) -> u32 {
    let offset = |n: &Node| match n {
        Node::Leaf(Leaf::Main { offset, .. } | Leaf::Fixed { offset, .. } | Leaf::Aux { offset, .. }) => *offset,
        _ => 0,
    };
    cs.nodes.iter().map(offset).max().unwrap_or(0)
}

fn trace_logs(cfg: &SuiteConfig) -> Vec<u32> {
    (0..=cfg.max_log.saturating_sub(2)).filter(|&l| l <= 4 || l % 2 == 0 || l == cfg.max_log - 2).collect()
}

/// The constraint systems compose is checked on: the stark examples' and
/// one using every kind of leaf and every vanishing domain.
pub(crate) fn systems() -> Vec<(String, ConstraintSystem)> {
    let mut out = vec![
        ("fibonacci".to_string(), stark::Air::constraints(&Fibonacci::default()).clone()),
        ("permutation".to_string(), stark::Air::constraints(&Permutation::default()).clone()),
    ];
    for w in [3, 7, 64] {
        out.push((format!("cubic{w}"), stark::Air::constraints(&Cubic::new(w)).clone()));
    }
    let two = TwoTables::default();
    for t in two.tables() {
        out.push((t.name().to_string(), t.constraints().clone()));
    }
    out.push(("mixed".to_string(), mixed_system()));
    out
}

/// The LogUp interactions the LogUp build is checked on: the stark
/// examples', the VM tables' and one reading fixed and main columns at
/// offsets 0..3 with 0 to 4 values and products in values and
/// multiplicities.
pub(crate) fn logups() -> Vec<(String, LogUp)> {
    let mut out = Vec::new();
    let perm = Permutation::default();
    let two = TwoTables::default();
    let program = vm::assemble(vm::examples::ALL[0].1).expect("example assembles");
    let machine = vm::VmMachine::new(&program, &[], &[]);
    let tables: Vec<&dyn stark::Air> = perm.tables().into_iter().chain(two.tables()).chain(machine.tables()).collect();
    for t in tables {
        out.push((t.name().to_string(), t.logup().expect("a bus table").clone()));
    }
    let layout = Layout { fixed_width: 2, main_width: 4, num_challenges: 2, ..Layout::default() };
    let m = |c, o| Expr::main(c, o);
    let interactions = vec![
        Interaction { tag: 5, values: vec![], mult: m(0, 0) },
        Interaction { tag: 6, values: vec![m(1, 0) * Expr::fixed(0, 1), m(2, 3)], mult: -(m(3, 0) * m(3, 1)) },
        Interaction {
            tag: 7,
            values: vec![Expr::fixed(1, 0), m(0, 2), m(1, 1) - m(2, 0), Expr::from_u64(9)],
            mult: Expr::fixed(0, 0) + Expr::one(),
        },
    ];
    out.push(("mixed".to_string(), LogUp::new(layout, interactions, 1, 0).expect("valid interactions")));
    out
}

/// Fixed, main and auxiliary columns, offsets 0..2, challenges, public
/// inputs, auxiliary values and all four constraint domains.
pub(crate) fn mixed_system() -> ConstraintSystem {
    let layout =
        Layout { fixed_width: 2, main_width: 3, aux_width: 2, num_challenges: 2, num_public: 2, num_aux_values: 1 };
    let mut b = ConstraintBuilder::new(layout);
    let m = |c, o| Expr::main(c, o);
    b.when_transition(m(0, 1) - m(0, 0) * m(1, 0) * Expr::fixed(0, 0) - Expr::public(0));
    b.when_first_row(Expr::aux(0, 0) * Expr::challenge(0) - m(2, 0));
    b.when_last_row(Expr::aux(1, 0) - Expr::aux_value(0) * Expr::fixed(1, 1));
    b.always(m(1, 0) * m(1, 0) - Expr::challenge(1) * m(2, 2));
    b.when_transition(
        Expr::aux(1, 1) - Expr::aux(1, 0) - Expr::aux(0, 1) * (Expr::challenge(0) - m(0, 1)) + Expr::public(1),
    );
    b.build().expect("valid constraints")
}

impl<B: Backend> Checker<'_, B> {
    /// Runs one case with its own seeded RNG and records it; a panic in
    /// the backend is a failure, not an abort of the suite.
    pub fn case(
        &mut self,
        op: impl Into<String>,
        rows: impl Into<String>,
        cols: impl Into<String>,
        f: impl FnOnce(&Self, &mut CaseRng) -> Result<(), String>,
    ) {
        let (op, rows, cols) = (op.into(), rows.into(), cols.into());
        let seed = case_seed(self.cfg.seed, &format!("{op}/{rows}/{cols}"));
        let mut r = rng(seed);
        let outcome = match catch_unwind(AssertUnwindSafe(|| f(self, &mut r))) {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(format!("{e} (case seed {seed:#x})")),
            Err(p) => Err(format!("panicked: {} (case seed {seed:#x})", panic_text(&*p))),
        };
        self.report.push(op, rows, cols, outcome);
    }

    pub fn up(&self, m: &ColMatrix) -> Result<(B::Matrix, CpuMatrix), String> {
        let g = self.b.upload(&CTX, m).map_err(|e| format!("upload: {e}"))?;
        if (g.height(), g.width()) != (m.height(), m.width()) {
            return Err(format!("uploaded matrix reports {}x{}", g.height(), g.width()));
        }
        Ok((g, CpuMatrix::from_host(m)))
    }

    /// Both results must succeed with equal bytes, or fail with equal
    /// errors. Returns both matrices for further stages.
    pub fn same_matrix(
        &self,
        got: backend_api::Result<B::Matrix>,
        want: backend_api::Result<CpuMatrix>,
    ) -> Result<Option<(B::Matrix, CpuMatrix)>, String> {
        match (got, want) {
            (Ok(g), Ok(w)) => {
                if (g.height(), g.width()) != (w.height(), w.width()) {
                    return Err(format!(
                        "result reports {}x{}, reference {}x{}",
                        g.height(),
                        g.width(),
                        w.height(),
                        w.width()
                    ));
                }
                let host = self.b.download(&CTX, &g).map_err(|e| format!("download: {e}"))?;
                same_host(&host, &w.to_host())?;
                Ok(Some((g, w)))
            }
            (Err(a), Err(b)) if a == b => Ok(None),
            (Err(a), Err(b)) => Err(format!("error {a:?}, reference {b:?}")),
            (Err(a), Ok(_)) => Err(format!("error {a:?}, the reference succeeded")),
            (Ok(_), Err(b)) => Err(format!("succeeded, the reference failed with {b:?}")),
        }
    }

    fn lde_cap(&self) -> usize {
        self.cfg.max_elems * 4
    }

    pub fn transfers(&mut self) {
        for (log, w) in self.cfg.shapes() {
            let rows = 1usize << log;
            self.case("upload+download", rows_label(rows), w.to_string(), |c, r| {
                let m = rand_matrix(r, w, rows);
                let (g, _) = c.up(&m)?;
                let back = c.b.download(&CTX, &g).map_err(|e| format!("download: {e}"))?;
                same_host(&back, &m)
            });
            // Pinned or not (a host backend pins nothing), a matrix and its
            // clones upload the same bytes, through the LDE's fused upload
            // too, and so does a clone written after the pin and the matrix
            // once the pin is dropped.
            self.case("pin, upload+download", rows_label(rows), w.to_string(), |c, r| {
                let m = rand_matrix(r, w, rows);
                let pin = c.b.pin(&CTX, &m).map_err(|e| format!("pin: {e}"))?;
                if ![0, 8 * (w * rows) as u64].contains(&pin.bytes()) {
                    return Err(format!("a pin of {} bytes for a buffer of {}", pin.bytes(), 8 * w * rows));
                }
                let roundtrip = |h: &ColMatrix| -> Result<(), String> {
                    let g = c.b.upload(&CTX, h).map_err(|e| format!("upload: {e}"))?;
                    same_host(&c.b.download(&CTX, &g).map_err(|e| format!("download: {e}"))?, h)
                };
                roundtrip(&m)?;
                roundtrip(&m.clone())?;
                let (shift, lb) = (rand_f(r), u32::from((w * rows) << 1 <= c.lde_cap()));
                let (g, lde) = c.b.upload_coset_lde(&CTX, &m.clone(), lb, shift).map_err(|e| e.to_string())?;
                same_host(&c.b.download(&CTX, &g).map_err(|e| e.to_string())?, &m)?;
                let cm = CpuMatrix::from_host(&m);
                c.same_matrix(Ok(lde), c.cpu.coset_lde(&CTX, &cm, lb, shift))?;
                let mut written = m.clone();
                written.data_mut()[0] = rand_f(r);
                roundtrip(&written)?;
                drop(pin);
                roundtrip(&m)
            });
            if rows >= 2 {
                let mut heights = vec![rows / 2, rows / rows.min(16)];
                heights.dedup();
                for h in heights {
                    self.case(format!("reshape /{}", rows / h), rows_label(rows), w.to_string(), |c, r| {
                        let m = rand_matrix(r, w, rows);
                        let (g, cm) = c.up(&m)?;
                        c.same_matrix(c.b.reshape(&CTX, &g, h), c.cpu.reshape(&CTX, &cm, h)).map(drop)
                    });
                }
            }
        }
    }

    pub fn ntt(&mut self) {
        for (log, w) in self.cfg.shapes() {
            let rows = 1usize << log;
            self.case("ntt", rows_label(rows), w.to_string(), |c, r| {
                let (g, cm) = c.up(&rand_matrix(r, w, rows))?;
                c.same_matrix(c.b.ntt(&CTX, &g), c.cpu.ntt(&CTX, &cm)).map(drop)
            });
            self.case("intt", rows_label(rows), w.to_string(), |c, r| {
                let (g, cm) = c.up(&rand_matrix(r, w, rows))?;
                c.same_matrix(c.b.intt(&CTX, &g), c.cpu.intt(&CTX, &cm)).map(drop)
            });
            // Its input given up: the result is intt's, whatever the input
            // holds afterwards.
            self.case("intt_in_place", rows_label(rows), w.to_string(), |c, r| {
                let (g, cm) = c.up(&rand_matrix(r, w, rows))?;
                c.same_matrix(c.b.intt_in_place(&CTX, &g), c.cpu.intt(&CTX, &cm)).map(drop)
            });
            self.case("intt(ntt(x)) = x", rows_label(rows), w.to_string(), |c, r| {
                let m = rand_matrix(r, w, rows);
                let (g, _) = c.up(&m)?;
                let f = c.b.ntt(&CTX, &g).map_err(|e| e.to_string())?;
                let back = c.b.intt(&CTX, &f).map_err(|e| e.to_string())?;
                same_host(&c.b.download(&CTX, &back).map_err(|e| e.to_string())?, &m)
            });
        }
    }

    pub fn lde(&mut self) {
        for (log, w) in self.cfg.shapes() {
            let rows = 1usize << log;
            // Blowup 1 is one coset of an LDE rebuilt on its own.
            for lb in 0..=4u32 {
                if w > 1 && (w << (log + lb)) > self.lde_cap() {
                    continue;
                }
                self.case(format!("coset_lde x{}", 1 << lb), rows_label(rows), w.to_string(), |c, r| {
                    let m = rand_matrix(r, w, rows);
                    // The prover's shifts are powers of the generator; any
                    // non-zero shift is valid.
                    let shift = if r.gen::<bool>() { GENERATOR } else { rand_f(r) };
                    let (g, cm) = c.up(&m)?;
                    c.same_matrix(c.b.coset_lde(&CTX, &g, lb, shift), c.cpu.coset_lde(&CTX, &cm, lb, shift)).map(drop)
                });
                self.case(format!("coset_ntt x{}", 1 << lb), rows_label(rows), w.to_string(), |c, r| {
                    let shift = rand_f(r);
                    let (g, cm) = c.up(&rand_matrix(r, w, rows))?;
                    c.same_matrix(c.b.coset_ntt(&CTX, &g, lb, shift), c.cpu.coset_ntt(&CTX, &cm, lb, shift)).map(drop)
                });
            }
            // The upload and the LDE in one call: both results.
            let mut lb = 1 + log % 3;
            while lb > 0 && (w << (log + lb)) > self.lde_cap() {
                lb -= 1;
            }
            self.case(format!("upload_coset_lde x{}", 1 << lb), rows_label(rows), w.to_string(), |c, r| {
                let (m, shift) = (rand_matrix(r, w, rows), rand_f(r));
                let (g, lde) = c.b.upload_coset_lde(&CTX, &m, lb, shift).map_err(|e| e.to_string())?;
                same_host(&c.b.download(&CTX, &g).map_err(|e| e.to_string())?, &m)?;
                let cm = c.cpu.upload(&CTX, &m).map_err(|e| e.to_string())?;
                c.same_matrix(Ok(lde), c.cpu.coset_lde(&CTX, &cm, lb, shift)).map(drop)
            });
            // Ties the coset NTT to the LDE: the coefficients' evaluations
            // are the LDE of the evaluations they interpolate.
            self.case("coset_ntt(intt(x)) = coset_lde(x)", rows_label(rows), w.to_string(), |c, r| {
                let shift = rand_f(r);
                let (g, _) = c.up(&rand_matrix(r, w, rows))?;
                let coeffs = c.b.intt(&CTX, &g).map_err(|e| e.to_string())?;
                let lb = r.gen_range(0..=2);
                let via = c.b.coset_ntt(&CTX, &coeffs, lb, shift).map_err(|e| e.to_string())?;
                let lde = c.b.coset_lde(&CTX, &g, lb, shift).map_err(|e| e.to_string())?;
                let d = |m| c.b.download(&CTX, m).map_err(|e| e.to_string());
                same_host(&d(&via)?, &d(&lde)?)
            });
            for log_fold in [1, 2, log].into_iter().filter(|&f| f >= 1 && f <= log) {
                self.case(format!("fold_coeffs /{}", 1u64 << log_fold), rows_label(rows), w.to_string(), |c, r| {
                    let point = rand_f(r);
                    let (g, cm) = c.up(&rand_matrix(r, w, rows))?;
                    let got = c.b.fold_coeffs(&CTX, &g, log_fold, point);
                    c.same_matrix(got, c.cpu.fold_coeffs(&CTX, &cm, log_fold, point)).map(drop)
                });
            }
            // Queried rows of a coset evaluated alone: the reference
            // coset's rows, at runs of neighbours, both ends and repeats.
            for k in [1, 3, 40] {
                self.case(format!("coset_rows of {k}"), rows_label(rows), w.to_string(), |c, r| {
                    let shift = rand_f(r);
                    let (g, cm) = c.up(&rand_matrix(r, w, rows))?;
                    let mut at: Vec<usize> = (0..k).map(|i| (r.gen_range(0..rows) + i / 4) % rows).collect();
                    at.extend([0, rows - 1, at[0]]);
                    let got = c.b.coset_rows(&CTX, &g, shift, &at).map_err(|e| e.to_string())?;
                    let coset = c.cpu.coset_ntt(&CTX, &cm, 0, shift).map_err(|e| e.to_string())?;
                    let want = c.cpu.rows(&CTX, &coset, &at).map_err(|e| e.to_string())?;
                    same_rows(&got, &want)
                });
            }
            // Pieces of rows, taken on the backend and put back together.
            for log_stride in [0, 1, 3.min(log)].into_iter().filter(|&s| s <= log) {
                let label = format!("stride_rows /{}", 1u64 << log_stride);
                self.case(label, rows_label(rows), w.to_string(), |c, r| {
                    let m = rand_matrix(r, w, rows);
                    let (g, _) = c.up(&m)?;
                    // Offsets past the last piece wrap a row on.
                    let first = r.gen_range(0..2usize << log_stride);
                    let got = c.b.stride_rows(&CTX, &g, first, log_stride).map_err(|e| e.to_string())?;
                    same_host(&c.b.download(&CTX, &got).map_err(|e| e.to_string())?, &m.stride_rows(first, log_stride))
                });
                let label = format!("interleave(stride_rows /{}) = x", 1u64 << log_stride);
                self.case(label, rows_label(rows), w.to_string(), |c, r| {
                    let m = rand_matrix(r, w, rows);
                    let (g, _) = c.up(&m)?;
                    let pieces = (0..1usize << log_stride)
                        .map(|j| c.b.stride_rows(&CTX, &g, j, log_stride))
                        .collect::<Result<Vec<_>, _>>()
                        .map_err(|e| e.to_string())?;
                    let whole = c.b.interleave(&CTX, &pieces.iter().collect::<Vec<_>>()).map_err(|e| e.to_string())?;
                    same_host(&c.b.download(&CTX, &whole).map_err(|e| e.to_string())?, &m)
                });
            }
            // Ties the fold to evaluation: on s * H_m (s^m the fold's point)
            // the folded coefficients take the polynomial's values, rows
            // 0, 2^f, 2 * 2^f, ... of its evaluations on s * H_n.
            if log >= 1 {
                self.case(
                    "coset_ntt(fold_coeffs(x)) = rows of coset_ntt(x)",
                    rows_label(rows),
                    w.to_string(),
                    |c, r| {
                        let (shift, log_fold) = (rand_f(r), r.gen_range(1..=log.min(3)));
                        let (g, _) = c.up(&rand_matrix(r, w, rows))?;
                        let m = rows >> log_fold;
                        let folded =
                            c.b.fold_coeffs(&CTX, &g, log_fold, shift.pow(m as u64)).map_err(|e| e.to_string())?;
                        let piece = c.b.coset_ntt(&CTX, &folded, 0, shift).map_err(|e| e.to_string())?;
                        let whole = c.b.coset_ntt(&CTX, &g, 0, shift).map_err(|e| e.to_string())?;
                        let d = |m| c.b.download(&CTX, m).map_err(|e| e.to_string());
                        same_host(&d(&piece)?, &rows_of(&d(&whole)?, 0, log_fold))
                    },
                );
            }
        }
    }

    /// `upload_commit` of `m`: the matrix uploaded, its extension, and the
    /// extension's root and openings, each against the reference.
    fn same_upload_commit(&self, m: &ColMatrix, lb: u32, hash: HashKind, r: &mut CaseRng) -> Result<(), String> {
        let shift = rand_f(r);
        let (g, lde, tree) = self.b.upload_commit(&CTX, m, lb, shift, hash).map_err(|e| e.to_string())?;
        same_host(&self.b.download(&CTX, &g).map_err(|e| e.to_string())?, m)?;
        let cm = self.cpu.coset_lde(&CTX, &CpuMatrix::from_host(m), lb, shift).map_err(|e| e.to_string())?;
        let host = self.b.download(&CTX, &lde).map_err(|e| e.to_string())?;
        same_host(&host, &cm.to_host())?;
        self.same_tree(&lde, &tree, &cm, hash, r)
    }

    fn same_commit(&self, g: &B::Matrix, cm: &CpuMatrix, hash: HashKind, r: &mut CaseRng) -> Result<(), String> {
        let gt = self.b.commit(&CTX, g, hash).map_err(|e| format!("commit: {e}"))?;
        self.same_tree(g, &gt, cm, hash, r)
    }

    /// `gt`, the backend's tree of `g`, against the reference's tree of
    /// `cm` (the same values): root, leaf count, hash and openings.
    fn same_tree(
        &self,
        g: &B::Matrix,
        gt: &B::Tree,
        cm: &CpuMatrix,
        hash: HashKind,
        r: &mut CaseRng,
    ) -> Result<(), String> {
        let ct = self.cpu.commit(&CTX, cm, hash).map_err(|e| format!("reference commit: {e}"))?;
        if gt.root() != ct.root() {
            return Err(format!("root {}, reference {}", hex(&gt.root()), hex(&ct.root())));
        }
        if gt.leaves() != ct.leaves() || gt.hash() != hash {
            return Err(format!(
                "tree reports {} leaves of {}, expected {} of {hash}",
                gt.leaves(),
                gt.hash(),
                ct.leaves()
            ));
        }
        let n = cm.height();
        let mut rows = vec![0, n - 1, 0];
        rows.extend((0..4).map(|_| r.gen_range(0..n)));
        let go = self.b.open(&CTX, g, gt, &rows).map_err(|e| format!("open: {e}"))?;
        let co = self.cpu.open(&CTX, cm, &ct, &rows).map_err(|e| format!("reference open: {e}"))?;
        if go.len() != co.len() {
            return Err(format!("{} openings for {} rows", go.len(), rows.len()));
        }
        for ((a, b), row) in go.iter().zip(&co).zip(&rows) {
            if a.values != b.values {
                return Err(format!("opening of row {row}: values differ"));
            }
            if a.path != b.path {
                return Err(format!("opening of row {row}: authentication path differs"));
            }
        }
        Ok(())
    }

    /// Leaf digests and gathered rows: each the host functions' bytes for
    /// some rows, and the reference backend's for every row.
    fn same_leaves_and_rows(&self, host: &ColMatrix, hash: HashKind, r: &mut CaseRng) -> Result<(), String> {
        let (g, cm) = self.up(host)?;
        let got = self.b.leaf_digests(&CTX, &g, hash).map_err(|e| format!("leaf_digests: {e}"))?;
        let want = self.cpu.leaf_digests(&CTX, &cm, hash).map_err(|e| format!("reference leaf_digests: {e}"))?;
        if got.len() != host.height() {
            return Err(format!("{} digests for {} rows", got.len(), host.height()));
        }
        let n = host.height();
        let mut rows = vec![0, n - 1, n / 2];
        rows.extend((0..5).map(|_| r.gen_range(0..n)));
        for &row in &rows {
            if want[row] != hash_leaf(hash, &host.row(row)) {
                return Err(format!("reference digest of row {row} is not the host hash"));
            }
        }
        if let Some(row) = got.iter().zip(&want).position(|(a, b)| a != b) {
            return Err(format!("digest of row {row}: {}, reference {}", hex(&got[row]), hex(&want[row])));
        }
        let values = self.b.rows(&CTX, &g, &rows).map_err(|e| format!("rows: {e}"))?;
        if values.len() != rows.len() {
            return Err(format!("{} rows gathered for {} asked", values.len(), rows.len()));
        }
        for (v, &row) in values.iter().zip(&rows) {
            if *v != host.row(row) {
                return Err(format!("row {row}: values differ"));
            }
        }
        Ok(())
    }

    pub fn merkle(&mut self) {
        for (log, w) in self.cfg.shapes() {
            let rows = 1usize << log;
            for hash in HashKind::ALL {
                self.case(format!("commit+open {hash}"), rows_label(rows), w.to_string(), |c, r| {
                    let (g, cm) = c.up(&rand_matrix(r, w, rows))?;
                    c.same_commit(&g, &cm, hash, r)
                });
                self.case(format!("leaf_digests+rows {hash}"), rows_label(rows), w.to_string(), |c, r| {
                    c.same_leaves_and_rows(&rand_matrix(r, w, rows), hash, r)
                });
                let mut lb = 1 + log % 3;
                while lb > 0 && (w << (log + lb)) > self.lde_cap() {
                    lb -= 1;
                }
                self.case(format!("upload_commit {hash} x{}", 1 << lb), rows_label(rows), w.to_string(), |c, r| {
                    c.same_upload_commit(&rand_matrix(r, w, rows), lb, hash, r)
                });
                if rows >= 4 {
                    // FRI layers commit rows of a reshaped matrix.
                    self.case(format!("commit+open {hash} reshaped /4"), rows_label(rows), w.to_string(), |c, r| {
                        let (g, cm) = c.up(&rand_matrix(r, w, rows))?;
                        let g = c.b.reshape(&CTX, &g, rows / 4).map_err(|e| format!("reshape: {e}"))?;
                        let cm = c.cpu.reshape(&CTX, &cm, rows / 4).map_err(|e| e.to_string())?;
                        c.same_commit(&g, &cm, hash, r)
                    });
                }
            }
        }
    }

    /// `upload_commit` at widths that end a row's leaf inside, at and just
    /// past a hash block (8 elements for BLAKE3, 17 for Keccak-256's rate)
    /// and past BLAKE3's 128-element chunk.
    pub fn upload_commit_blocks(&mut self) {
        let log = self.cfg.max_log.min(10);
        for w in [8, 9, 16, 17, 18, 34, 35, 129] {
            if (w << (log + 2)) > self.lde_cap() {
                continue;
            }
            for hash in HashKind::ALL {
                self.case(format!("upload_commit {hash} x4"), rows_label(1 << log), w.to_string(), |c, r| {
                    c.same_upload_commit(&rand_matrix(r, w, 1 << log), 2, hash, r)
                });
            }
        }
    }

    pub fn compose(&mut self) {
        for (name, cs) in systems() {
            let l = cs.layout;
            let width = l.fixed_width + l.main_width + 3 * l.aux_width + 3;
            for log_n in trace_logs(self.cfg) {
                for lb in 1..=4u32 {
                    let big = 1usize << (log_n + lb);
                    if big * width > self.lde_cap() {
                        continue;
                    }
                    // On the whole LDE, and on its quotient domains: every
                    // 2^s-th row, read in place.
                    for s in [0, 1, lb].into_iter().filter(|&s| s <= lb).collect::<std::collections::BTreeSet<_>>() {
                        let shape = match s {
                            0 => format!("x{}", 1 << lb),
                            _ => format!("x{}, rows {} apart", 1 << lb, 1 << s),
                        };
                        self.case(format!("compose {name}"), rows_label(1 << log_n), shape, |c, r| {
                            let fixed = (l.fixed_width > 0).then(|| rand_matrix(r, l.fixed_width, big));
                            let main = rand_matrix(r, l.main_width, big);
                            let aux = (l.aux_width > 0).then(|| rand_matrix(r, 3 * l.aux_width, big));
                            let challenges = rand_exts(r, l.num_challenges);
                            let publics = rand_felts(r, l.num_public);
                            let aux_values = rand_exts(r, l.num_aux_values);
                            let alpha = rand_ext(r);
                            let domain = Coset::new(log_n + lb - s, GENERATOR);
                            let (gm, cmm) = c.up(&main)?;
                            let gf = fixed.as_ref().map(|m| c.up(m)).transpose()?;
                            let ga = aux.as_ref().map(|m| c.up(m)).transpose()?;
                            let got = c.b.compose(
                                &CTX,
                                &ComposeInputs {
                                    constraints: &cs,
                                    fixed: gf.as_ref().map(|p| &p.0),
                                    main: &gm,
                                    aux: ga.as_ref().map(|p| &p.0),
                                    log_trace_height: log_n,
                                    domain,
                                    challenges: &challenges,
                                    publics: &publics,
                                    aux_values: &aux_values,
                                    alpha,
                                    next: None,
                                    log_stride: s,
                                },
                            );
                            let want = c.cpu.compose(
                                &CTX,
                                &ComposeInputs {
                                    constraints: &cs,
                                    fixed: gf.as_ref().map(|p| &p.1),
                                    main: &cmm,
                                    aux: ga.as_ref().map(|p| &p.1),
                                    log_trace_height: log_n,
                                    domain,
                                    challenges: &challenges,
                                    publics: &publics,
                                    aux_values: &aux_values,
                                    alpha,
                                    next: None,
                                    log_stride: s,
                                },
                            );
                            c.same_matrix(got, want).map(drop)
                        });
                    }
                    if max_offset(&cs) <= 1 {
                        self.compose_piece(&name, &cs, log_n, lb);
                    }
                }
            }
        }
    }

    /// Composition on a piece of the LDE given its next rows (rows j, j +
    /// 2^L, ... with L past the blowup, as a prover short of memory runs
    /// it) against the reference's composition of the whole LDE.
    fn compose_piece(&mut self, name: &str, cs: &ConstraintSystem, log_n: u32, lb: u32) {
        let Some(extra) = [2u32, 1].into_iter().find(|&e| e <= log_n) else { return };
        let l = cs.layout;
        let (big, log_pieces) = (1usize << (log_n + lb), lb + extra);
        self.case(
            format!("compose {name} on a piece /{}", 1 << log_pieces),
            rows_label(1 << log_n),
            format!("x{}", 1 << lb),
            |c, r| {
                let fixed = (l.fixed_width > 0).then(|| rand_matrix(r, l.fixed_width, big));
                let main = rand_matrix(r, l.main_width, big);
                let aux = (l.aux_width > 0).then(|| rand_matrix(r, 3 * l.aux_width, big));
                let (challenges, publics) = (rand_exts(r, l.num_challenges), rand_felts(r, l.num_public));
                let (aux_values, alpha) = (rand_exts(r, l.num_aux_values), rand_ext(r));
                let domain = Coset::new(log_n + lb, GENERATOR);
                let j = r.gen_range(0..1usize << log_pieces);
                // Row j + k * 2^L's successor is B rows on: rows j + B, ... of
                // the LDE, the last wrapping to the first.
                let piece_of = |m: &ColMatrix, first: usize| c.up(&rows_of(&rotated(m, first), 0, log_pieces));
                let up3 = |first: usize| -> Result<_, String> {
                    Ok((
                        fixed.as_ref().map(|m| piece_of(m, first)).transpose()?,
                        piece_of(&main, first)?,
                        aux.as_ref().map(|m| piece_of(m, first)).transpose()?,
                    ))
                };
                let (f, m, a) = up3(j)?;
                let (nf, nm, na) = up3(j + (1 << lb))?;
                let piece = Coset::new(log_n + lb - log_pieces, domain.shift * domain.generator().pow(j as u64));
                let got = c.b.compose(
                    &CTX,
                    &ComposeInputs {
                        constraints: cs,
                        fixed: f.as_ref().map(|p| &p.0),
                        main: &m.0,
                        aux: a.as_ref().map(|p| &p.0),
                        log_trace_height: log_n,
                        domain: piece,
                        challenges: &challenges,
                        publics: &publics,
                        aux_values: &aux_values,
                        alpha,
                        next: Some(NextRows {
                            fixed: nf.as_ref().map(|p| &p.0),
                            main: &nm.0,
                            aux: na.as_ref().map(|p| &p.0),
                        }),
                        log_stride: 0,
                    },
                );
                let up = |m: &ColMatrix| Ok::<_, String>(CpuMatrix::from_host(m));
                let (wf, wm, wa) = (fixed.as_ref().map(up).transpose()?, up(&main)?, aux.as_ref().map(up).transpose()?);
                let whole = c.cpu.compose(
                    &CTX,
                    &ComposeInputs {
                        constraints: cs,
                        fixed: wf.as_ref(),
                        main: &wm,
                        aux: wa.as_ref(),
                        log_trace_height: log_n,
                        domain,
                        challenges: &challenges,
                        publics: &publics,
                        aux_values: &aux_values,
                        alpha,
                        next: None,
                        log_stride: 0,
                    },
                );
                let whole =
                    c.cpu.download(&CTX, &whole.map_err(|e| format!("reference: {e}"))?).map_err(|e| e.to_string())?;
                let got = c.b.download(&CTX, &got.map_err(|e| e.to_string())?).map_err(|e| e.to_string())?;
                same_host(&got, &rows_of(&whole, j, log_pieces))
            },
        );
    }

    pub fn logup(&mut self) {
        for (name, logup) in logups() {
            let l = logup.eval.layout;
            let width = l.fixed_width + l.main_width + 3 * logup.aux_width();
            for log_n in trace_logs(self.cfg).into_iter().chain([self.cfg.max_log]) {
                let n = 1usize << log_n;
                if n * width > self.lde_cap() {
                    continue;
                }
                self.case(format!("logup {name}"), rows_label(n), format!("{}", logup.aux_width()), |c, r| {
                    let main = rand_matrix(r, l.main_width, n);
                    let fixed = (l.fixed_width > 0).then(|| rand_matrix(r, l.fixed_width, n));
                    c.same_logup(&logup, &main, fixed.as_ref(), rand_ext(r), rand_ext(r))
                });
            }
        }
        // A denominator that vanishes on some rows: its inverse is 0 there.
        let layout = Layout { main_width: 2, num_challenges: 2, ..Layout::default() };
        let its = vec![
            Interaction { tag: 3, values: vec![Expr::main(0, 0)], mult: Expr::main(1, 0) },
            Interaction { tag: 4, values: vec![Expr::main(1, 1)], mult: Expr::one() },
        ];
        let logup = LogUp::new(layout, its, 0, 1).expect("valid interactions");
        for log_n in [0, 3, 11] {
            let n = 1usize << log_n;
            self.case("logup zero denominator", rows_label(n), "3", |c, r| {
                let mut main = rand_matrix(r, 2, n);
                let alpha = rand_ext(r);
                let v = rand_f(r);
                for row in (0..n).step_by(3) {
                    main.set(row, 0, v);
                }
                let z = alpha.mul_base(v) + F::new(3);
                c.same_logup(&logup, &main, None, z, alpha)
            });
        }
    }

    fn same_logup(
        &self,
        logup: &LogUp,
        main: &ColMatrix,
        fixed: Option<&ColMatrix>,
        z: backend_api::Ext,
        alpha: backend_api::Ext,
    ) -> Result<(), String> {
        let (gm, cm) = self.up(main)?;
        let gf = fixed.map(|m| self.up(m)).transpose()?;
        let got = self.b.logup_aux(&CTX, &LogUpInputs { logup, main: &gm, fixed: gf.as_ref().map(|p| &p.0), z, alpha });
        let want =
            self.cpu.logup_aux(&CTX, &LogUpInputs { logup, main: &cm, fixed: gf.as_ref().map(|p| &p.1), z, alpha });
        let (got, want) = match (got, want) {
            (Ok((g, gs)), Ok((w, ws))) => {
                if gs != ws {
                    return Err(format!("final sum {gs:?}, reference {ws:?}"));
                }
                (Ok(g), Ok(w))
            }
            (g, w) => (g.map(|p| p.0), w.map(|p| p.0)),
        };
        self.same_matrix(got, want).map(drop)
    }

    /// Evaluations on `domain` of three random polynomials with `degree`
    /// coefficients (and one extra at `bump` when given).
    fn quotient_evals(&self, r: &mut CaseRng, domain: Coset, degree: usize, bump: Option<usize>) -> ColMatrix {
        let big = domain.size();
        let mut data = vec![F::ZERO; 3 * big];
        for coord in 0..3 {
            let col = &mut data[coord * big..(coord + 1) * big];
            for v in &mut col[..degree] {
                *v = rand_f(r);
            }
        }
        if let Some(k) = bump {
            let coord = r.gen_range(0..3);
            data[coord * big + k] = rand_f(r);
        }
        // p(shift * w^j) is the NTT of the coefficients c_i * shift^i.
        for coord in 0..3 {
            let mut s = F::ONE;
            for v in &mut data[coord * big..(coord + 1) * big] {
                *v *= s;
                s *= domain.shift;
            }
        }
        let m = CpuMatrix::new(3, big, data).expect("shape");
        self.cpu.ntt(&CTX, &m).expect("reference ntt").to_host()
    }

    pub fn quotient(&mut self) {
        for log_n in trace_logs(self.cfg) {
            let n = 1usize << log_n;
            for lb in 1..=4u32 {
                let big = n << lb;
                if 3 * big > self.lde_cap() {
                    continue;
                }
                let mut parts = vec![1, 2, 3, 1 << lb];
                parts.retain(|&p| p <= 1 << lb);
                parts.sort_unstable();
                parts.dedup();
                let domain = Coset::new(log_n + lb, GENERATOR);
                let op = format!("split_quotient x{}", 1 << lb);
                for &p in &parts {
                    self.case(op.clone(), rows_label(n), format!("{p} parts"), |c, r| {
                        let q = c.quotient_evals(r, domain, p * n, None);
                        let (g, cm) = c.up(&q)?;
                        let got = c.b.split_quotient(&CTX, &g, domain, log_n, p, domain.log_size);
                        let want = c.cpu.split_quotient(&CTX, &cm, domain, log_n, p, domain.log_size);
                        if let Err(e) = &want {
                            return Err(format!("the reference refused a valid quotient: {e}"));
                        }
                        c.same_matrix(got, want).map(drop)
                    });
                    // From the quotient domain (parts * n points, rounded
                    // up to a power of two) out to the LDE, as the prover
                    // splits.
                    let log_q = log_n + p.next_power_of_two().trailing_zeros();
                    if log_q < domain.log_size {
                        let qdomain = Coset::new(log_q, GENERATOR);
                        self.case(format!("{op} from 2^{log_q}"), rows_label(n), format!("{p} parts"), |c, r| {
                            let q = c.quotient_evals(r, qdomain, p * n, None);
                            let (g, cm) = c.up(&q)?;
                            let got = c.b.split_quotient(&CTX, &g, qdomain, log_n, p, domain.log_size);
                            let want = c.cpu.split_quotient(&CTX, &cm, qdomain, log_n, p, domain.log_size);
                            if let Err(e) = &want {
                                return Err(format!("the reference refused a valid quotient: {e}"));
                            }
                            c.same_matrix(got, want).map(drop)
                        });
                    }
                }
                // One non-zero coefficient at or past parts * n: the same
                // ConstraintsNotSatisfied on both.
                for &p in parts.iter().filter(|&&p| p * n < big) {
                    self.case(format!("{op} degree too high"), rows_label(n), format!("{p} parts"), |c, r| {
                        let bump = p * n + r.gen_range(0..big - p * n);
                        let q = c.quotient_evals(r, domain, p * n, Some(bump));
                        let (g, cm) = c.up(&q)?;
                        let got = c.b.split_quotient(&CTX, &g, domain, log_n, p, domain.log_size).map(drop);
                        let want = c.cpu.split_quotient(&CTX, &cm, domain, log_n, p, domain.log_size).map(drop);
                        match (got, want) {
                            (Err(a), Err(b @ BackendError::ConstraintsNotSatisfied { .. })) if a == b => Ok(()),
                            (got, want) => Err(format!("got {got:?}, reference {want:?}")),
                        }
                    });
                }
            }
        }
    }

    pub fn deep(&mut self) {
        for (log, w) in self.cfg.shapes() {
            let rows = 1usize << log;
            self.case("evaluate_at trace domain", rows_label(rows), w.to_string(), |c, r| {
                let (g, cm) = c.up(&rand_matrix(r, w, rows))?;
                let z = rand_ext(r);
                let points = [z, z * F::two_adic_root(log)];
                let d = Coset::subgroup(log);
                let got = c.b.evaluate_at(&CTX, &g, d, 0, &points).map_err(|e| e.to_string())?;
                let want = c.cpu.evaluate_at(&CTX, &cm, d, 0, &points).map_err(|e| e.to_string())?;
                (got == want).then_some(()).ok_or_else(|| "values differ".to_string())
            });
            self.case("evaluate_at coset", rows_label(rows), w.to_string(), |c, r| {
                let (g, cm) = c.up(&rand_matrix(r, w, rows))?;
                let points = [rand_ext(r)];
                let d = Coset::new(log, GENERATOR);
                let got = c.b.evaluate_at(&CTX, &g, d, 0, &points).map_err(|e| e.to_string())?;
                let want = c.cpu.evaluate_at(&CTX, &cm, d, 0, &points).map_err(|e| e.to_string())?;
                (got == want).then_some(()).ok_or_else(|| "values differ".to_string())
            });
            // Coefficients at z and z * w (a table's values at z, its
            // trace never rebuilt), one point on H_n and one of the base
            // field: the reference's values of the columns they transform to.
            self.case("evaluate_coeffs", rows_label(rows), w.to_string(), |c, r| {
                let (g, cm) = c.up(&rand_matrix(r, w, rows))?;
                let (z, d) = (rand_ext(r), Coset::subgroup(log));
                let on = Ext::from_base(d.generator().pow(r.gen_range(0..rows as u64)));
                let points = [z, z * F::two_adic_root(log), on, Ext::from_base(rand_f(r))];
                let got = c.b.evaluate_coeffs(&CTX, &g, &points).map_err(|e| e.to_string())?;
                let evals = c.cpu.ntt(&CTX, &cm).map_err(|e| e.to_string())?;
                let want = c.cpu.evaluate_at(&CTX, &evals, d, 0, &points).map_err(|e| e.to_string())?;
                (got == want).then_some(()).ok_or_else(|| "values differ".to_string())
            });
            // A committed LDE read in place on the coset of every 2^s-th
            // row, at three points off the domain (a backend may read a
            // matrix once for several) and one on it (its rows themselves).
            for s in [1u32, 2] {
                if (rows << s) * w > self.lde_cap() && w > 1 {
                    continue;
                }
                self.case(format!("evaluate_at rows {} apart", 1 << s), rows_label(rows), w.to_string(), |c, r| {
                    let (g, cm) = c.up(&rand_matrix(r, w, rows << s))?;
                    let d = Coset::new(log, GENERATOR);
                    let on = Ext::from_base(d.shift * d.generator().pow(r.gen_range(0..rows as u64)));
                    let points = [rand_ext(r), on, rand_ext(r), rand_ext(r)];
                    let got = c.b.evaluate_at(&CTX, &g, d, s, &points).map_err(|e| e.to_string())?;
                    let want = c.cpu.evaluate_at(&CTX, &cm, d, s, &points).map_err(|e| e.to_string())?;
                    let rows_apart = c.cpu.stride_rows(&CTX, &cm, 0, s).map_err(|e| e.to_string())?;
                    let copied = c.cpu.evaluate_at(&CTX, &rows_apart, d, 0, &points).map_err(|e| e.to_string())?;
                    match (got == want, want == copied) {
                        (true, true) => Ok(()),
                        (false, _) => Err("values differ".to_string()),
                        (_, false) => Err("the reference's strided values differ from its copied rows'".to_string()),
                    }
                });
            }
            for lb in [1u32, 2] {
                let big = rows << lb;
                if big * (w + 12) > self.lde_cap() && w > 1 {
                    continue;
                }
                // Main, auxiliary-like and quotient-like matrices (0, 1, 2)
                // at z; main and auxiliary again at z * w (the next row).
                // Then three points: a matrix at the second point only, one
                // at the first two in another order, one at the third only.
                let prove_like: &[(u64, &[usize])] = &[(0, &[0, 1, 2]), (1, &[0, 1])];
                let three: &[(u64, &[usize])] = &[(0, &[0]), (1, &[1, 0]), (2, &[2])];
                for (name, pattern) in [("deep_quotient", prove_like), ("deep_quotient 3 points", three)] {
                    self.case(format!("{name} x{}", 1 << lb), rows_label(rows), w.to_string(), |c, r| {
                        let mats: Vec<ColMatrix> = [w, 6, 6].iter().map(|&k| rand_matrix(r, k, big)).collect();
                        let up: Vec<(B::Matrix, CpuMatrix)> = mats.iter().map(|m| c.up(m)).collect::<Result<_, _>>()?;
                        let z = rand_ext(r);
                        let spec: Vec<DeepSpec> = pattern
                            .iter()
                            .map(|&(k, at)| {
                                let cols = at
                                    .iter()
                                    .map(|&i| (i, rand_exts(r, mats[i].width()), rand_exts(r, mats[i].width())));
                                (z * F::two_adic_root(log).pow(k), cols.collect())
                            })
                            .collect();
                        let domain = Coset::new(log + lb, GENERATOR);
                        let gp: Vec<DeepPoint<B::Matrix>> = spec
                            .iter()
                            .map(|(p, cols)| DeepPoint {
                                point: *p,
                                columns: cols
                                    .iter()
                                    .map(|(i, k, v)| DeepColumns {
                                        matrix: &up[*i].0,
                                        coeffs: k.clone(),
                                        values: v.clone(),
                                    })
                                    .collect(),
                            })
                            .collect();
                        let cp: Vec<DeepPoint<CpuMatrix>> = spec
                            .iter()
                            .map(|(p, cols)| DeepPoint {
                                point: *p,
                                columns: cols
                                    .iter()
                                    .map(|(i, k, v)| DeepColumns {
                                        matrix: &up[*i].1,
                                        coeffs: k.clone(),
                                        values: v.clone(),
                                    })
                                    .collect(),
                            })
                            .collect();
                        c.same_matrix(c.b.deep_quotient(&CTX, domain, &gp), c.cpu.deep_quotient(&CTX, domain, &cp))
                            .map(drop)
                    });
                }
            }
            // Any height: a combination is row by row.
            for height in [rows, rows + rows / 2 + 1] {
                self.case("combine_columns", rows_label(height), w.to_string(), |c, r| {
                    let (g, cm) = c.up(&rand_matrix(r, w, height))?;
                    let weights = rand_exts(r, w);
                    let got = c.b.combine_columns(&CTX, &g, &weights);
                    c.same_matrix(got, c.cpu.combine_columns(&CTX, &cm, &weights)).map(drop)
                });
            }
            // What a recomputed table's DEEP quotient relies on: combining
            // coefficients, then extending 3 columns, is extending every
            // column, then combining.
            self.case("deep_quotient(combined) = deep_quotient(columns)", rows_label(rows), w.to_string(), |c, r| {
                let (coeffs, _) = c.up(&rand_matrix(r, w, rows))?;
                let (weights, values) = (rand_exts(r, w), rand_exts(r, w));
                let domain = Coset::new(log + 1, GENERATOR);
                let z = rand_ext(r);
                let e = |x: Result<B::Matrix, BackendError>| x.map_err(|e| e.to_string());
                let lde = e(c.b.coset_ntt(&CTX, &coeffs, 1, GENERATOR))?;
                let combined = e(c.b.combine_columns(&CTX, &coeffs, &weights))?;
                let combined = e(c.b.coset_ntt(&CTX, &combined, 1, GENERATOR))?;
                let value: Ext = weights.iter().zip(&values).map(|(&k, &v)| k * v).sum();
                let basis = vec![Ext::ONE, Ext([F::ZERO, F::ONE, F::ZERO]), Ext([F::ZERO, F::ZERO, F::ONE])];
                let whole =
                    [DeepPoint { point: z, columns: vec![DeepColumns { matrix: &lde, coeffs: weights, values }] }];
                let values = vec![value, Ext::ZERO, Ext::ZERO];
                let columns = vec![DeepColumns { matrix: &combined, coeffs: basis, values }];
                let d = |m: &B::Matrix| c.b.download(&CTX, m).map_err(|e| e.to_string());
                let want = d(&e(c.b.deep_quotient(&CTX, domain, &whole))?)?;
                let got = e(c.b.deep_quotient(&CTX, domain, &[DeepPoint { point: z, columns }]))?;
                same_host(&d(&got)?, &want)
            });
        }
    }

    pub fn fri(&mut self) {
        for log in 1..=self.cfg.max_log + 2 {
            for la in 1..=4u32.min(log) {
                for roll in [false, true] {
                    let op = format!("fri_fold /{}{}", 1 << la, if roll { " +roll-in" } else { "" });
                    self.case(op, rows_label(1 << log), "3", |c, r| {
                        let layer = rand_matrix(r, 3, 1 << log);
                        let domain = Coset::new(log, GENERATOR.pow(r.gen_range(1..64)));
                        let beta = rand_ext(r);
                        let (g, cm) = c.up(&layer)?;
                        let rolled =
                            if roll { Some((c.up(&rand_matrix(r, 3, 1 << (log - la)))?, rand_ext(r))) } else { None };
                        let got = c.b.fri_fold(&CTX, &g, domain, la, beta, rolled.as_ref().map(|((g, _), s)| (g, *s)));
                        let want =
                            c.cpu.fri_fold(&CTX, &cm, domain, la, beta, rolled.as_ref().map(|((_, m), s)| (m, *s)));
                        c.same_matrix(got, want).map(drop)
                    });
                }
            }
        }
    }

    pub fn grind(&mut self) {
        for hash in HashKind::ALL {
            for bits in [0u32, 1, 2, 4, 8, 12, 16] {
                for s in 0..2 {
                    self.case(format!("grind {hash}"), format!("{bits} bits"), format!("seed {s}"), |c, r| {
                        let mut seed = [0u8; 32];
                        r.fill(&mut seed[..]);
                        let got = c.b.grind(&CTX, hash, &seed, bits).map_err(|e| e.to_string())?;
                        let want = c.cpu.grind(&CTX, hash, &seed, bits).map_err(|e| e.to_string())?;
                        (got == want).then_some(()).ok_or_else(|| format!("nonce {got}, reference (smallest) {want}"))
                    });
                }
            }
        }
    }
}
