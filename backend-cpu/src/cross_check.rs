//! [`CrossCheck`]: a backend that runs two backends in lockstep and, at the
//! first stage whose results differ, fails with `BackendError::Mismatch`
//! naming the stage, the table, the column and the row.
//!
//! Every device result is downloaded from both sides and compared, so this
//! is a diagnostic mode (`kiln prove --cross-check`), not a fast one. It is
//! one hook over `backend_api::Op` ([`OpHook`]): each op is projected onto
//! both sides, run, and its two results compared by kind.

use backend_api::{
    Backend, BackendBase, BackendError, ColMatrix, Ctx, DeviceMatrix, DeviceSet, DeviceTree, Digest, HashKind, HostPin,
    Lane, Op, OpHook, Out, Reservation, Result, Stage,
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
        host_difference(stage, ctx, &l, &r)
    }

    /// Compares the two results of one op and pairs them.
    fn agree(
        &self,
        ctx: &Ctx,
        op: &Op<'_, &PM<A, B>, &PT<A, B>>,
        l: Out<A::Matrix, A::Tree>,
        r: Out<B::Matrix, B::Tree>,
    ) -> Result<Out<PM<A, B>, PT<A, B>>> {
        let stage = op.stage();
        let differ = |c, row, a: String, b: String| Err(mismatch(stage, ctx, c, row, a, b));
        match (l, r) {
            // A reshape is a view of a matrix already compared; the commit
            // that follows compares roots.
            (Out::Matrix(left), Out::Matrix(right)) => {
                let m = Pair { left, right };
                if !matches!(op, Op::Reshape { .. }) {
                    self.compare(stage, ctx, &m)?;
                }
                Ok(Out::Matrix(m))
            }
            (Out::LogUp(left, ls), Out::LogUp(right, rs)) => {
                let m = Pair { left, right };
                self.compare(stage, ctx, &m)?;
                if ls != rs {
                    // The sum is the running-sum column's last row.
                    let col = match op {
                        Op::LogUpAux { logup, .. } => 3 * logup.interactions(),
                        _ => 0,
                    };
                    return differ(col, m.left.height() - 1, format!("{ls:?}"), format!("{rs:?}"));
                }
                Ok(Out::LogUp(m, ls))
            }
            (Out::Extended(left, left_lde), Out::Extended(right, right_lde)) => {
                let (m, lde) = (Pair { left, right }, Pair { left: left_lde, right: right_lde });
                self.compare(Stage::Upload, ctx, &m)?;
                self.compare(stage, ctx, &lde)?;
                Ok(Out::Extended(m, lde))
            }
            (Out::Committed(left, left_lde, lt), Out::Committed(right, right_lde, rt)) => {
                let (m, lde) = (Pair { left, right }, Pair { left: left_lde, right: right_lde });
                self.compare(Stage::Upload, ctx, &m)?;
                self.compare(stage, ctx, &lde)?;
                if lt.root() != rt.root() {
                    return Err(mismatch(Stage::MerkleCommit, ctx, 0, 0, hex(lt.root()), hex(rt.root())));
                }
                Ok(Out::Committed(m, lde, Pair { left: lt, right: rt }))
            }
            (Out::Host(l), Out::Host(r)) => host_difference(stage, ctx, &l, &r).map(|_| Out::Host(l)),
            (Out::Tree(left), Out::Tree(right)) => {
                if left.root() != right.root() {
                    return differ(0, 0, hex(left.root()), hex(right.root()));
                }
                Ok(Out::Tree(Pair { left, right }))
            }
            (Out::Openings(l), Out::Openings(r)) => {
                if let Some(i) = l.iter().zip(&r).position(|(a, b)| a != b) {
                    let col = l[i].values.iter().zip(&r[i].values).position(|(a, b)| a != b).unwrap_or(0);
                    let row = match op {
                        Op::Open { rows, .. } => rows[i],
                        _ => i,
                    };
                    return differ(col, row, format!("{:?}", l[i]), format!("{:?}", r[i]));
                }
                Ok(Out::Openings(l))
            }
            (Out::Digests(l), Out::Digests(r)) => match l.iter().zip(&r).position(|(a, b)| a != b) {
                Some(i) => differ(0, i, hex(l[i]), hex(r[i])),
                None => Ok(Out::Digests(l)),
            },
            (Out::Rows(l), Out::Rows(r)) => {
                if let Some(i) = l.iter().zip(&r).position(|(a, b)| a != b) {
                    let col = l[i].iter().zip(&r[i]).position(|(a, b)| a != b).unwrap_or(0);
                    let row = match op {
                        Op::Rows { rows, .. } => rows[i],
                        _ => i,
                    };
                    return differ(col, row, format!("{:?}", l[i]), format!("{:?}", r[i]));
                }
                Ok(Out::Rows(l))
            }
            (Out::Values(l), Out::Values(r)) => {
                for (p, (a, b)) in l.iter().zip(&r).enumerate() {
                    if let Some(c) = a.iter().zip(b).position(|(x, y)| x != y) {
                        return differ(c, p, format!("{:?}", a[c]), format!("{:?}", b[c]));
                    }
                }
                Ok(Out::Values(l))
            }
            (Out::Nonce(l), Out::Nonce(r)) if l != r => differ(0, 0, l.to_string(), r.to_string()),
            (Out::Nonce(l), Out::Nonce(_)) => Ok(Out::Nonce(l)),
            (l, r) => differ(0, 0, l.kind().to_string(), r.kind().to_string()),
        }
    }
}

fn hex(d: Digest) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

type PM<A, B> = Pair<<A as BackendBase>::Matrix, <B as BackendBase>::Matrix>;
type PT<A, B> = Pair<<A as BackendBase>::Tree, <B as BackendBase>::Tree>;

/// The mismatch at the first differing element of two host matrices.
fn host_difference(stage: Stage, ctx: &Ctx, l: &ColMatrix, r: &ColMatrix) -> Result<()> {
    match first_difference(l, r) {
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

/// Every op runs on both sides (each seeing its half of every pair); the
/// results must agree.
impl<A: Backend, B: Backend> OpHook for CrossCheck<A, B> {
    type Matrix = PM<A, B>;
    type Tree = PT<A, B>;

    fn name(&self) -> &str {
        &self.name
    }

    fn run(&self, ctx: &Ctx, op: Op<'_, &PM<A, B>, &PT<A, B>>) -> Result<Out<PM<A, B>, PT<A, B>>> {
        let l = op.map(|m| &m.left, |t| &t.left).dispatch(&self.left, ctx);
        let r = op.map(|m| &m.right, |t| &t.right).dispatch(&self.right, ctx);
        let (l, r) = both(op.stage(), ctx, l, r)?;
        self.agree(ctx, &op, l, r)
    }

    fn drain(&self) -> Result<()> {
        self.left.drain()?;
        self.right.drain()
    }

    fn reserve(&self, ctx: &Ctx, lanes: &[Lane], set: &DeviceSet) -> Result<Reservation> {
        Ok(Reservation::both(self.left.reserve(ctx, lanes, set)?, self.right.reserve(ctx, lanes, set)?))
    }
    fn pin(&self, ctx: &Ctx, m: &ColMatrix) -> Result<HostPin> {
        Ok(HostPin::both(self.left.pin(ctx, m)?, self.right.pin(ctx, m)?))
    }
}
