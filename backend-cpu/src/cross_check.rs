//! [`CrossCheck`]: a backend that runs two backends in lockstep and, at the
//! first stage whose results differ, fails with `BackendError::Mismatch`
//! naming the stage, the table, the column and the row.
//!
//! Every device result is downloaded from both sides and compared, so this
//! is a diagnostic mode (`kiln prove --cross-check`), not a fast one.

use backend_api::{
    Backend, BackendBase, BackendError, ColMatrix, ComposeInputs, ComposeOps, Coset, Ctx, DeepOps, DeepPoint,
    DeviceMatrix, DeviceTree, Digest, Ext, FriOps, HashKind, LogUpInputs, LogUpOps, MerkleOps, NttOps, Result,
    RowOpening, Stage, F,
};

/// The same value on both backends.
pub struct Pair<L, R> {
    pub left: L,
    pub right: R,
}

impl<L: DeviceMatrix, R: DeviceMatrix> DeviceMatrix for Pair<L, R> {
    fn height(&self) -> usize {
        self.left.height()
    }
    fn width(&self) -> usize {
        self.left.width()
    }
}

impl<L: DeviceTree, R: DeviceTree> DeviceTree for Pair<L, R> {
    fn root(&self) -> Digest {
        self.left.root()
    }
    fn leaves(&self) -> usize {
        self.left.leaves()
    }
    fn hash(&self) -> HashKind {
        self.left.hash()
    }
}

/// Runs `A` (normally the reference) and `B` side by side.
pub struct CrossCheck<A: Backend, B: Backend> {
    left: A,
    right: B,
    name: String,
}

impl<A: Backend, B: Backend> CrossCheck<A, B> {
    pub fn new(left: A, right: B) -> CrossCheck<A, B> {
        let name = format!("cross-check({}, {})", left.name(), right.name());
        CrossCheck { left, right, name }
    }

    pub fn left(&self) -> &A {
        &self.left
    }

    pub fn right(&self) -> &B {
        &self.right
    }
}

fn mismatch(stage: Stage, ctx: &Ctx, column: usize, row: usize, left: String, right: String) -> BackendError {
    BackendError::Mismatch { stage, table: ctx.table.to_string(), column, row, left, right }
}

/// Both results, or the mismatch of their errors.
fn both<L, R>(stage: Stage, ctx: &Ctx, l: Result<L>, r: Result<R>) -> Result<(L, R)> {
    match (l, r) {
        (Ok(l), Ok(r)) => Ok((l, r)),
        (Err(a), Err(b)) if a == b => Err(a),
        (l, r) => {
            let show = |e: std::result::Result<(), BackendError>| match e {
                Ok(()) => "ok".to_string(),
                Err(e) => e.to_string(),
            };
            Err(mismatch(stage, ctx, 0, 0, show(l.map(|_| ())), show(r.map(|_| ()))))
        }
    }
}

/// The first (column, row) where two host matrices differ.
pub fn first_difference(a: &ColMatrix, b: &ColMatrix) -> Option<(usize, usize)> {
    if (a.height(), a.width()) != (b.height(), b.width()) {
        return Some((0, 0));
    }
    (0..a.width()).find_map(|c| {
        let (x, y) = (a.column(c), b.column(c));
        x.iter().zip(y).position(|(u, v)| u != v).map(|r| (c, r))
    })
}

impl<A: Backend, B: Backend> CrossCheck<A, B> {
    fn compare(&self, stage: Stage, ctx: &Ctx, m: &Pair<A::Matrix, B::Matrix>) -> Result<()> {
        let l = self.left.download(ctx, &m.left)?;
        let r = self.right.download(ctx, &m.right)?;
        match first_difference(&l, &r) {
            None => Ok(()),
            Some((c, row)) if (l.height(), l.width()) == (r.height(), r.width()) => {
                Err(mismatch(stage, ctx, c, row, l.get(row, c).to_string(), r.get(row, c).to_string()))
            }
            Some(_) => Err(mismatch(
                stage,
                ctx,
                0,
                0,
                format!("{}x{}", l.height(), l.width()),
                format!("{}x{}", r.height(), r.width()),
            )),
        }
    }

    fn matrix(
        &self,
        stage: Stage,
        ctx: &Ctx,
        l: Result<A::Matrix>,
        r: Result<B::Matrix>,
    ) -> Result<Pair<A::Matrix, B::Matrix>> {
        let (left, right) = both(stage, ctx, l, r)?;
        let m = Pair { left, right };
        self.compare(stage, ctx, &m)?;
        Ok(m)
    }
}

impl<A: Backend, B: Backend> BackendBase for CrossCheck<A, B> {
    type Matrix = Pair<A::Matrix, B::Matrix>;
    type Tree = Pair<A::Tree, B::Tree>;

    fn name(&self) -> &str {
        &self.name
    }

    fn upload(&self, ctx: &Ctx, m: &ColMatrix) -> Result<Self::Matrix> {
        self.matrix(Stage::Upload, ctx, self.left.upload(ctx, m), self.right.upload(ctx, m))
    }

    fn download(&self, ctx: &Ctx, m: &Self::Matrix) -> Result<ColMatrix> {
        let (l, r) = both(Stage::Download, ctx, self.left.download(ctx, &m.left), self.right.download(ctx, &m.right))?;
        match first_difference(&l, &r) {
            None => Ok(l),
            Some((c, row)) => Err(mismatch(Stage::Download, ctx, c, row, String::new(), String::new())),
        }
    }

    fn reshape(&self, ctx: &Ctx, m: &Self::Matrix, height: usize) -> Result<Self::Matrix> {
        let l = self.left.reshape(ctx, &m.left, height);
        let r = self.right.reshape(ctx, &m.right, height);
        let (left, right) = both(Stage::MerkleCommit, ctx, l, r)?;
        Ok(Pair { left, right })
    }

    fn drain(&self) -> Result<()> {
        self.left.drain()?;
        self.right.drain()
    }
}

impl<A: Backend, B: Backend> NttOps for CrossCheck<A, B> {
    fn ntt(&self, ctx: &Ctx, m: &Self::Matrix) -> Result<Self::Matrix> {
        self.matrix(Stage::Ntt, ctx, self.left.ntt(ctx, &m.left), self.right.ntt(ctx, &m.right))
    }

    fn intt(&self, ctx: &Ctx, m: &Self::Matrix) -> Result<Self::Matrix> {
        self.matrix(Stage::InverseNtt, ctx, self.left.intt(ctx, &m.left), self.right.intt(ctx, &m.right))
    }

    fn coset_lde(&self, ctx: &Ctx, m: &Self::Matrix, log_blowup: u32, shift: F) -> Result<Self::Matrix> {
        let l = self.left.coset_lde(ctx, &m.left, log_blowup, shift);
        let r = self.right.coset_lde(ctx, &m.right, log_blowup, shift);
        self.matrix(Stage::CosetLde, ctx, l, r)
    }
}

impl<A: Backend, B: Backend> MerkleOps for CrossCheck<A, B> {
    fn commit(&self, ctx: &Ctx, m: &Self::Matrix, hash: HashKind) -> Result<Self::Tree> {
        let l = self.left.commit(ctx, &m.left, hash);
        let r = self.right.commit(ctx, &m.right, hash);
        let (left, right) = both(Stage::MerkleCommit, ctx, l, r)?;
        if left.root() != right.root() {
            let hex = |d: Digest| d.iter().map(|b| format!("{b:02x}")).collect::<String>();
            return Err(mismatch(Stage::MerkleCommit, ctx, 0, 0, hex(left.root()), hex(right.root())));
        }
        Ok(Pair { left, right })
    }

    fn open(&self, ctx: &Ctx, m: &Self::Matrix, tree: &Self::Tree, rows: &[usize]) -> Result<Vec<RowOpening>> {
        let l = self.left.open(ctx, &m.left, &tree.left, rows);
        let r = self.right.open(ctx, &m.right, &tree.right, rows);
        let (l, r) = both(Stage::MerkleOpen, ctx, l, r)?;
        if let Some(i) = l.iter().zip(&r).position(|(a, b)| a != b) {
            let col = l[i].values.iter().zip(&r[i].values).position(|(a, b)| a != b).unwrap_or(0);
            return Err(mismatch(Stage::MerkleOpen, ctx, col, rows[i], format!("{:?}", l[i]), format!("{:?}", r[i])));
        }
        Ok(l)
    }
}

impl<A: Backend, B: Backend> ComposeOps for CrossCheck<A, B> {
    fn compose(&self, ctx: &Ctx, i: &ComposeInputs<Self::Matrix>) -> Result<Self::Matrix> {
        let l = self.left.compose(ctx, &i.map(|m| &m.left));
        let r = self.right.compose(ctx, &i.map(|m| &m.right));
        self.matrix(Stage::Compose, ctx, l, r)
    }

    fn split_quotient(
        &self,
        ctx: &Ctx,
        q: &Self::Matrix,
        domain: Coset,
        log_trace_height: u32,
        parts: usize,
    ) -> Result<Self::Matrix> {
        let l = self.left.split_quotient(ctx, &q.left, domain, log_trace_height, parts);
        let r = self.right.split_quotient(ctx, &q.right, domain, log_trace_height, parts);
        self.matrix(Stage::QuotientSplit, ctx, l, r)
    }
}

impl<A: Backend, B: Backend> LogUpOps for CrossCheck<A, B> {
    fn logup_aux(&self, ctx: &Ctx, i: &LogUpInputs<Self::Matrix>) -> Result<(Self::Matrix, Ext)> {
        let l = self.left.logup_aux(ctx, &i.map(|m| &m.left));
        let r = self.right.logup_aux(ctx, &i.map(|m| &m.right));
        let ((lm, ls), (rm, rs)) = both(Stage::LogUp, ctx, l, r)?;
        let m = self.matrix(Stage::LogUp, ctx, Ok(lm), Ok(rm))?;
        if ls != rs {
            // The sum is the running-sum column's last row.
            let (col, row) = (3 * i.logup.interactions(), m.left.height() - 1);
            return Err(mismatch(Stage::LogUp, ctx, col, row, format!("{ls:?}"), format!("{rs:?}")));
        }
        Ok((m, ls))
    }
}

impl<A: Backend, B: Backend> DeepOps for CrossCheck<A, B> {
    fn evaluate_at(&self, ctx: &Ctx, m: &Self::Matrix, domain: Coset, points: &[Ext]) -> Result<Vec<Vec<Ext>>> {
        let l = self.left.evaluate_at(ctx, &m.left, domain, points);
        let r = self.right.evaluate_at(ctx, &m.right, domain, points);
        let (l, r) = both(Stage::OutOfDomain, ctx, l, r)?;
        for (p, (a, b)) in l.iter().zip(&r).enumerate() {
            if let Some(c) = a.iter().zip(b).position(|(x, y)| x != y) {
                return Err(mismatch(Stage::OutOfDomain, ctx, c, p, format!("{:?}", a[c]), format!("{:?}", b[c])));
            }
        }
        Ok(l)
    }

    fn deep_quotient(&self, ctx: &Ctx, domain: Coset, points: &[DeepPoint<Self::Matrix>]) -> Result<Self::Matrix> {
        let lp: Vec<DeepPoint<A::Matrix>> = points.iter().map(|p| p.map(|m| &m.left)).collect();
        let rp: Vec<DeepPoint<B::Matrix>> = points.iter().map(|p| p.map(|m| &m.right)).collect();
        let l = self.left.deep_quotient(ctx, domain, &lp);
        let r = self.right.deep_quotient(ctx, domain, &rp);
        self.matrix(Stage::Deep, ctx, l, r)
    }
}

impl<A: Backend, B: Backend> FriOps for CrossCheck<A, B> {
    fn fri_fold(
        &self,
        ctx: &Ctx,
        layer: &Self::Matrix,
        domain: Coset,
        log_arity: u32,
        beta: Ext,
        roll_in: Option<(&Self::Matrix, Ext)>,
    ) -> Result<Self::Matrix> {
        let l = self.left.fri_fold(ctx, &layer.left, domain, log_arity, beta, roll_in.map(|(g, s)| (&g.left, s)));
        let r = self.right.fri_fold(ctx, &layer.right, domain, log_arity, beta, roll_in.map(|(g, s)| (&g.right, s)));
        self.matrix(Stage::FriFold, ctx, l, r)
    }

    fn grind(&self, ctx: &Ctx, hash: HashKind, seed: &Digest, bits: u32) -> Result<u64> {
        let (l, r) =
            both(Stage::Grind, ctx, self.left.grind(ctx, hash, seed, bits), self.right.grind(ctx, hash, seed, bits))?;
        if l != r {
            return Err(mismatch(Stage::Grind, ctx, 0, 0, l.to_string(), r.to_string()));
        }
        Ok(l)
    }
}
