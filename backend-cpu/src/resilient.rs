//! Device-decline recovery for any backend: [`Resilient`] wraps a device
//! backend and, when it declines a stage (allocation, admission, launch or
//! transfer refused), drains the device and retries once; if it declines
//! again, either recomputes that stage with the reference backend and
//! uploads the result (`OnDecline::Recompute`), or returns the typed
//! `DeviceDecline` (`OnDecline::Strict`). Every decline, retry and
//! recompute is counted per stage and logged on one line (`log::warn!`).
//!
//! `Resilient` is one hook over `backend_api::Op` ([`OpHook`]): every
//! operation takes the same path, described once.
//!
//! Recomputing a stage needs its inputs on the host. Each matrix therefore
//! remembers how it was made (its recipe: the `Op` itself, over its
//! inputs' lineages): the host copy comes from a download while the
//! device buffer is still held, and otherwise from replaying the recipe on
//! the reference backend. So the proof is byte-identical whichever path
//! ran, even when transfers themselves are declined. A recipe holds its
//! inputs' host-side lineage, never their device buffers: dropping a
//! matrix frees its device memory even when later matrices were made from
//! it (the fixed LDE is freed after composition, not at the proof's end).
//!
//! Host memory exhaustion (`BackendError::HostAlloc`, from either backend)
//! is not a decline: it is returned at once, neither retried nor
//! recomputed, since a recompute runs on the host and needs more of the
//! memory that just ran out.

use crate::{CpuBackend, CpuMatrix, CpuTree};
use backend_api::{
    Backend, BackendBase, BackendError, ColMatrix, Ctx, DeviceMatrix, DeviceSet, DeviceTree, Digest, HashKind, HostPin,
    Lane, MerkleOps, NttOps, Op, OpHook, Out, Reservation, Result, Stage, F,
};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};

/// What to do when a stage is declined again after the retry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum OnDecline {
    /// Recompute the stage on the reference backend and upload the result.
    #[default]
    Recompute,
    /// Return the `DeviceDecline` error.
    Strict,
}

/// The recovery policy of one prove.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecoveryPolicy {
    /// Drain the device (synchronize, trim the pool) and try once more.
    pub retry: bool,
    pub on_decline: OnDecline,
}

impl Default for RecoveryPolicy {
    fn default() -> Self {
        RecoveryPolicy { retry: true, on_decline: OnDecline::Recompute }
    }
}

/// Counts of one stage.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StageRecovery {
    /// Declines seen (first attempts and retries).
    pub declines: u64,
    /// Stages that succeeded on the device after drain and retry.
    pub retried: u64,
    /// Stages recomputed on the reference backend.
    pub recomputed: u64,
}

/// Recovery counts per stage.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    pub stages: Vec<(Stage, StageRecovery)>,
}

impl RecoveryReport {
    pub fn get(&self, stage: Stage) -> StageRecovery {
        self.stages.iter().find(|(s, _)| *s == stage).map(|(_, r)| *r).unwrap_or_default()
    }
    pub fn total(&self) -> StageRecovery {
        self.stages.iter().fold(StageRecovery::default(), |a, (_, r)| StageRecovery {
            declines: a.declines + r.declines,
            retried: a.retried + r.retried,
            recomputed: a.recomputed + r.recomputed,
        })
    }
    pub fn is_clean(&self) -> bool {
        self.total() == StageRecovery::default()
    }
}

impl fmt::Display for RecoveryReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for (stage, r) in self.stages.iter().filter(|(_, r)| *r != StageRecovery::default()) {
            if !first {
                f.write_str(", ")?;
            }
            first = false;
            write!(f, "{stage}: {} declined, {} retried, {} recomputed", r.declines, r.retried, r.recomputed)?;
        }
        if first {
            f.write_str("no device declines")?;
        }
        Ok(())
    }
}

#[derive(Default)]
struct Counters {
    declines: [AtomicU64; Stage::ALL.len()],
    retried: [AtomicU64; Stage::ALL.len()],
    recomputed: [AtomicU64; Stage::ALL.len()],
}

fn slot(stage: Stage) -> usize {
    Stage::ALL.iter().position(|&s| s == stage).expect("every stage is listed")
}

/// A matrix on the device, or recomputed on the host when the device
/// declined, with the recipe that made it. Dropping the last handle frees
/// the device buffer: recipes of later matrices hold only the host-side
/// [`Lineage`], never a device buffer, so recovery pins no device memory.
pub struct RMatrix<M>(Arc<Held<M>>);

impl<M> Clone for RMatrix<M> {
    fn clone(&self) -> Self {
        RMatrix(self.0.clone())
    }
}

/// What a handle holds: the device buffer, and its lineage.
struct Held<M> {
    dev: Option<M>,
    lineage: Arc<Lineage<M>>,
}

/// How to get a matrix on the host: its host copy once made, its device
/// buffer while a handle still holds it (a download), else its recipe
/// replayed on the reference backend from its inputs' lineages.
struct Lineage<M> {
    height: usize,
    width: usize,
    host: OnceLock<CpuMatrix>,
    recipe: Recipe<M>,
    held: Weak<Held<M>>,
}

enum Recipe<M> {
    /// Made on the host (an upload's source, or a recomputed result): the
    /// host copy is always set.
    Host,
    /// The op that made it on the device, to replay on the reference.
    Op(Box<Op<'static, Arc<Lineage<M>>, ()>>),
}

impl<M> RMatrix<M> {
    fn make(dev: Option<M>, height: usize, width: usize, host: OnceLock<CpuMatrix>, recipe: Recipe<M>) -> Self {
        RMatrix(Arc::new_cyclic(|held| Held {
            dev,
            lineage: Arc::new(Lineage { height, width, host, recipe, held: held.clone() }),
        }))
    }
}

impl<M: DeviceMatrix> DeviceMatrix for RMatrix<M> {
    fn height(&self) -> usize {
        self.0.lineage.height
    }
    fn width(&self) -> usize {
        self.0.lineage.width
    }
}

impl<M> RMatrix<M> {
    fn dev(&self) -> Option<&M> {
        self.0.dev.as_ref()
    }
    /// Whether the matrix lives on the device.
    pub fn on_device(&self) -> bool {
        self.0.dev.is_some()
    }
}

/// A Merkle tree on the device, or rebuilt on the host. The root is read
/// from the device tree when first asked for (a device backend may still
/// be computing it when the tree is returned).
pub struct RTree<T> {
    dev: Option<T>,
    /// Set at creation when there is no device tree.
    host: OnceLock<CpuTree>,
    leaves: usize,
    hash: HashKind,
}

impl<T: DeviceTree> DeviceTree for RTree<T> {
    fn root(&self) -> Digest {
        match &self.dev {
            Some(d) => d.root(),
            None => self.host.get().map(|h| h.root()).unwrap_or_default(),
        }
    }
    fn leaves(&self) -> usize {
        self.leaves
    }
    fn hash(&self) -> HashKind {
        self.hash
    }
}

/// A device backend with decline recovery.
pub struct Resilient<B: Backend> {
    device: B,
    reference: CpuBackend,
    policy: RecoveryPolicy,
    counters: Counters,
    name: String,
}

impl<B: Backend> Resilient<B> {
    pub fn new(device: B, policy: RecoveryPolicy) -> Resilient<B> {
        let name = device.name().to_string();
        Resilient { device, reference: CpuBackend::new(), policy, counters: Counters::default(), name }
    }

    pub fn device(&self) -> &B {
        &self.device
    }

    pub fn policy(&self) -> RecoveryPolicy {
        self.policy
    }

    /// The recovery counts so far.
    pub fn report(&self) -> RecoveryReport {
        let load = |a: &[AtomicU64; Stage::ALL.len()], i: usize| a[i].load(Ordering::Acquire);
        RecoveryReport {
            stages: Stage::ALL
                .iter()
                .enumerate()
                .map(|(i, &s)| {
                    let c = &self.counters;
                    (
                        s,
                        StageRecovery {
                            declines: load(&c.declines, i),
                            retried: load(&c.retried, i),
                            recomputed: load(&c.recomputed, i),
                        },
                    )
                })
                .collect(),
        }
    }

    fn count(&self, which: &[AtomicU64; Stage::ALL.len()], stage: Stage) {
        which[slot(stage)].fetch_add(1, Ordering::AcqRel);
    }

    /// Runs a device attempt with the policy's drain and retry. Returns
    /// `Ok(None)` when the stage should be recomputed on the host.
    fn attempt<T>(&self, stage: Stage, ctx: &Ctx, op: impl FnMut() -> Result<T>) -> Result<Option<T>> {
        let then = || format!("recomputing {stage} for table {} on the reference backend", ctx.table);
        self.attempt_then(stage, op, then)
    }

    /// [`Resilient::attempt`], logging `then()` when the device gives up.
    fn attempt_then<T>(
        &self,
        stage: Stage,
        op: impl FnMut() -> Result<T>,
        then: impl FnOnce() -> String,
    ) -> Result<Option<T>> {
        let err = match self.retried(stage, op)? {
            Ok(v) => return Ok(Some(v)),
            Err(decline) => decline,
        };
        match self.policy.on_decline {
            OnDecline::Strict => Err(err),
            OnDecline::Recompute => {
                self.count(&self.counters.recomputed, stage);
                log::warn!("{err}; {}", then());
                Ok(None)
            }
        }
    }

    /// Runs a device op; a decline is counted under the stage that
    /// declined (`stage` if it names none), and with the policy's retry the
    /// device is drained and the op run once more. `Ok(Err(decline))`: the
    /// device declined for good.
    fn retried<T>(
        &self,
        stage: Stage,
        mut op: impl FnMut() -> Result<T>,
    ) -> Result<std::result::Result<T, BackendError>> {
        let declined = |e: &BackendError| match e {
            BackendError::DeviceDecline { stage, .. } => *stage,
            _ => stage,
        };
        let mut err = match op() {
            Ok(v) => return Ok(Ok(v)),
            Err(e) if e.is_decline() => e,
            Err(e) => return Err(e),
        };
        self.count(&self.counters.declines, declined(&err));
        if self.policy.retry {
            self.device.drain()?;
            match op() {
                Ok(v) => {
                    self.count(&self.counters.retried, declined(&err));
                    log::warn!("{err}; drained and retried: ok");
                    return Ok(Ok(v));
                }
                Err(e) if e.is_decline() => {
                    self.count(&self.counters.declines, declined(&e));
                    err = e;
                }
                Err(e) => return Err(e),
            }
        }
        Ok(Err(err))
    }
}

/// The two paths every op takes: the device, else the reference.
impl<B: Backend> Resilient<B> {
    /// The host copy of a matrix: cached, downloaded, or replayed. Kept in
    /// the matrix's lineage, so the borrow lives as long as the matrix's.
    fn host_ref<'m>(&self, ctx: &Ctx, m: &'m RM<B>) -> Result<&'m CpuMatrix> {
        self.host_of(ctx, &m.0.lineage)
    }

    fn host_of<'l>(&self, ctx: &Ctx, l: &'l Lineage<B::Matrix>) -> Result<&'l CpuMatrix> {
        if let Some(h) = l.host.get() {
            return Ok(h);
        }
        // Held only for the download: a handle still holds it.
        let held = l.held.upgrade();
        let downloaded = match held.as_ref().and_then(|h| h.dev.as_ref()) {
            Some(d) => self.attempt(Stage::Download, ctx, || self.device.download(ctx, d))?,
            None => None,
        };
        drop(held);
        let h = match downloaded {
            Some(h) => CpuMatrix::from_host(&h),
            None => self.replay(ctx, &l.recipe)?,
        };
        Ok(l.host.get_or_init(|| h))
    }

    /// Recomputes a matrix from its recipe on the reference backend.
    fn replay(&self, ctx: &Ctx, recipe: &Recipe<B::Matrix>) -> Result<CpuMatrix> {
        let internal = |message: &str| BackendError::Device {
            stage: Stage::Download,
            table: ctx.table.to_string(),
            message: message.into(),
        };
        let Recipe::Op(op) = recipe else {
            return Err(internal("host copy of a host-made matrix is missing"));
        };
        let no_tree = |_: &()| -> Result<&CpuTree> { Err(internal("a recipe holds no tree")) };
        let on_host = op.try_map(|l| self.host_of(ctx, l), no_tree)?;
        match on_host.dispatch(&self.reference, ctx)? {
            Out::Matrix(m) | Out::LogUp(m, _) => Ok(m),
            other => Err(other.wrong(op.stage(), ctx, "a matrix")),
        }
    }

    fn upload(&self, ctx: &Ctx, m: &ColMatrix) -> Result<RM<B>> {
        let dev = self.attempt(Stage::Upload, ctx, || self.device.upload(ctx, m))?;
        let host = OnceLock::from(CpuMatrix::from_host(m));
        Ok(RMatrix::make(dev, m.height(), m.width(), host, Recipe::Host))
    }

    /// The upload and its extension in one device call (the device may
    /// overlap them), with drain and retry. Declined for good, the
    /// reference extends and both matrices are uploaded.
    fn upload_coset_lde(&self, ctx: &Ctx, m: &ColMatrix, log_blowup: u32, shift: F) -> Result<(RM<B>, RM<B>)> {
        let both = self.attempt(Stage::CosetLde, ctx, || self.device.upload_coset_lde(ctx, m, log_blowup, shift))?;
        let Some((dev, lde)) = both else {
            let lde = self.reference.coset_lde(ctx, &CpuMatrix::from_host(m), log_blowup, shift)?;
            let dev = self.attempt(Stage::Upload, ctx, || self.device.upload(ctx, &lde.to_host()))?;
            let (h, w) = (lde.height(), lde.width());
            let lde = RMatrix::make(dev, h, w, OnceLock::from(lde), Recipe::Host);
            return Ok((self.upload(ctx, m)?, lde));
        };
        Ok(Self::extended(m, dev, lde, log_blowup, shift))
    }

    /// [`Self::upload_coset_lde`] and the commit in one device call, with
    /// drain and retry, counted under the stage that declined. Declined for
    /// good, the two one after the other, each recovered on its own (what
    /// the policy does with a part that declines again).
    fn upload_commit(
        &self,
        ctx: &Ctx,
        m: &ColMatrix,
        log_blowup: u32,
        shift: F,
        hash: HashKind,
    ) -> Result<Out<RM<B>, RT<B>>> {
        let fused = || self.device.upload_commit(ctx, m, log_blowup, shift, hash);
        let declined = match self.retried(Stage::CosetLde, fused)? {
            Ok(v) => return Ok(Self::committed(m, v, log_blowup, shift)),
            Err(decline) => decline,
        };
        log::warn!("{declined}; uploading, extending and committing in separate calls");
        let (trace, lde) = self.upload_coset_lde(ctx, m, log_blowup, shift)?;
        let tree = MerkleOps::commit(self, ctx, &lde, hash)?;
        Ok(Out::Committed(trace, lde, tree))
    }

    /// The device's `upload_commit` results as this backend's.
    fn committed(
        m: &ColMatrix,
        (dev, lde, tree): (B::Matrix, B::Matrix, B::Tree),
        log_blowup: u32,
        shift: F,
    ) -> Out<RM<B>, RT<B>> {
        let (trace, lde) = Self::extended(m, dev, lde, log_blowup, shift);
        Out::Committed(
            trace,
            lde,
            RTree { leaves: tree.leaves(), hash: tree.hash(), dev: Some(tree), host: OnceLock::new() },
        )
    }

    /// A host matrix uploaded as `dev` and its extension made on the device
    /// as `lde`: the trace keeps its host copy, the extension its recipe.
    fn extended(m: &ColMatrix, dev: B::Matrix, lde: B::Matrix, log_blowup: u32, shift: F) -> (RM<B>, RM<B>) {
        let host = CpuMatrix::from_host(m);
        let trace = RMatrix::make(Some(dev), m.height(), m.width(), OnceLock::from(host), Recipe::Host);
        let recipe = Recipe::Op(Box::new(Op::CosetLde { m: trace.0.lineage.clone(), log_blowup, shift }));
        let (h, w) = (lde.height(), lde.width());
        (trace, RMatrix::make(Some(lde), h, w, OnceLock::new(), recipe))
    }

    /// Runs `op` on the device when every input is there, with drain and
    /// retry. `None`: run it on the host instead.
    fn on_device(&self, ctx: &Ctx, op: &Op<'_, &RM<B>, &RT<B>>) -> Result<Option<Out<RM<B>, RT<B>>>> {
        let Ok(dev_op) = op.try_map(|m| m.dev().ok_or(()), |t| t.dev.as_ref().ok_or(())) else {
            return Ok(None);
        };
        let Some(out) = self.attempt(op.stage(), ctx, || dev_op.dispatch(&self.device, ctx))? else {
            return Ok(None);
        };
        let made = |dev: B::Matrix| {
            let recipe = Recipe::Op(Box::new(op.map(|m| m.0.lineage.clone(), |_| ()).into_owned()));
            let (h, w) = (dev.height(), dev.width());
            RMatrix::make(Some(dev), h, w, OnceLock::new(), recipe)
        };
        let tree = |t: B::Tree| RTree { leaves: t.leaves(), hash: t.hash(), dev: Some(t), host: OnceLock::new() };
        Ok(Some(out.map(made, tree)))
    }

    /// Runs `op` on the reference backend over the inputs' host copies; a
    /// matrix result is uploaded when the device accepts it.
    fn on_host(&self, ctx: &Ctx, op: &Op<'_, &RM<B>, &RT<B>>) -> Result<Out<RM<B>, RT<B>>> {
        if let Op::Open { m, tree, .. } = op {
            if tree.host.get().is_none() {
                let t = self.reference.commit(ctx, self.host_ref(ctx, m)?, tree.hash)?;
                let _ = tree.host.set(t);
            }
        }
        let missing = || BackendError::Device {
            stage: op.stage(),
            table: ctx.table.to_string(),
            message: "host tree missing".into(),
        };
        let host_op = op.try_map(|m| self.host_ref(ctx, m), |t| t.host.get().ok_or_else(missing))?;
        let made = |host: CpuMatrix| -> Result<RM<B>> {
            let dev = self.attempt(Stage::Upload, ctx, || self.device.upload(ctx, &host.to_host()))?;
            let (h, w) = (host.height(), host.width());
            Ok(RMatrix::make(dev, h, w, OnceLock::from(host), Recipe::Host))
        };
        let tree = |t: CpuTree| Ok(RTree { leaves: t.leaves(), hash: t.hash(), dev: None, host: OnceLock::from(t) });
        host_op.dispatch(&self.reference, ctx)?.try_map(made, tree)
    }
}

type RM<B> = RMatrix<<B as BackendBase>::Matrix>;
type RT<B> = RTree<<B as BackendBase>::Tree>;

/// Every op: validated on the wrapper's handles, then run on the device
/// when its inputs are there and it is not declined for good, else on the
/// reference.
impl<B: Backend> OpHook for Resilient<B> {
    type Matrix = RM<B>;
    type Tree = RT<B>;

    fn name(&self) -> &str {
        &self.name
    }

    fn run(&self, ctx: &Ctx, op: Op<'_, &RM<B>, &RT<B>>) -> Result<Out<RM<B>, RT<B>>> {
        op.validate()?;
        match &op {
            Op::Upload(m) => Ok(Out::Matrix(self.upload(ctx, m)?)),
            Op::UploadCosetLde { m, log_blowup, shift } => {
                let (trace, lde) = self.upload_coset_lde(ctx, m, *log_blowup, *shift)?;
                Ok(Out::Extended(trace, lde))
            }
            Op::UploadCommit { m, log_blowup, shift, hash } => self.upload_commit(ctx, m, *log_blowup, *shift, *hash),
            Op::Download(m) => Ok(Out::Host(self.host_ref(ctx, m)?.to_host())),
            _ => match self.on_device(ctx, &op)? {
                Some(out) => Ok(out),
                None => self.on_host(ctx, &op),
            },
        }
    }

    fn drain(&self) -> Result<()> {
        self.device.drain()
    }

    /// A declined reservation takes the policy's path: drain and retry,
    /// then under `Recompute` the proof runs unreserved (each stage is
    /// admitted on its own, and recomputed here if declined), under
    /// `Strict` the decline is returned. Counted under the upload stage,
    /// the proof's first.
    fn reserve(&self, ctx: &Ctx, lanes: &[Lane], set: &DeviceSet) -> Result<Reservation> {
        let then = || "proving without a reservation: each stage is admitted on its own".to_string();
        let held = self.attempt_then(Stage::Upload, || self.device.reserve(ctx, lanes, set), then)?;
        Ok(held.unwrap_or_else(Reservation::none))
    }

    /// A declined pin costs speed, not the proof: uploads go through
    /// staging.
    fn pin(&self, ctx: &Ctx, m: &ColMatrix) -> Result<HostPin> {
        let then = || "uploading through staging: the host buffer is not pinned".to_string();
        let held = self.attempt_then(Stage::Upload, || self.device.pin(ctx, m), then)?;
        Ok(held.unwrap_or_else(HostPin::none))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use backend_api::{NttOps, F, GENERATOR};
    use std::sync::atomic::{AtomicBool, AtomicUsize};

    /// A "device" that counts its live matrices and can decline everything.
    #[derive(Default)]
    struct Tracked {
        cpu: CpuBackend,
        live: Arc<AtomicUsize>,
        decline: AtomicBool,
    }

    struct Live(Arc<AtomicUsize>);
    impl Drop for Live {
        fn drop(&mut self) {
            self.0.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// A matrix and its live count, given back on drop.
    struct TMatrix(CpuMatrix, #[allow(dead_code)] Live);
    impl DeviceMatrix for TMatrix {
        fn height(&self) -> usize {
            self.0.height()
        }
        fn width(&self) -> usize {
            self.0.width()
        }
    }

    impl OpHook for Tracked {
        type Matrix = TMatrix;
        type Tree = CpuTree;
        fn name(&self) -> &str {
            "tracked"
        }
        fn run(&self, ctx: &Ctx, op: Op<'_, &TMatrix, &CpuTree>) -> Result<Out<TMatrix, CpuTree>> {
            if self.decline.load(Ordering::SeqCst) {
                let (stage, table) = (op.stage(), ctx.table.to_string());
                let reason = "test".to_string();
                return Err(BackendError::DeviceDecline { stage, table, requested_bytes: 1, free_bytes: 0, reason });
            }
            let out = op.map(|m| &m.0, |t| *t).dispatch(&self.cpu, ctx)?;
            Ok(out.map(
                |m| {
                    self.live.fetch_add(1, Ordering::SeqCst);
                    TMatrix(m, Live(self.live.clone()))
                },
                |t| t,
            ))
        }
        fn drain(&self) -> Result<()> {
            Ok(())
        }
        fn reserve(&self, _ctx: &Ctx, _lanes: &[Lane], _set: &DeviceSet) -> Result<Reservation> {
            Ok(Reservation::none())
        }
        /// Pins (nothing, but says so in its bytes) unless declining.
        fn pin(&self, ctx: &Ctx, m: &ColMatrix) -> Result<HostPin> {
            if self.decline.load(Ordering::SeqCst) {
                let (stage, table, reason) = (Stage::Upload, ctx.table.to_string(), "test".to_string());
                return Err(BackendError::DeviceDecline { stage, table, requested_bytes: 1, free_bytes: 0, reason });
            }
            Ok(HostPin::held(8 * m.data().len() as u64, Box::new(())))
        }
    }

    #[test]
    fn a_declined_pin_uploads_unpinned_and_is_counted() {
        let r = Resilient::new(Tracked::default(), RecoveryPolicy::default());
        let ctx = Ctx::table("t");
        let host = ColMatrix::new(3, 8, (0..24u64).map(|i| F::new(i * 3 + 1)).collect());
        assert_eq!(BackendBase::pin(&r, &ctx, &host).unwrap().bytes(), 8 * 24, "forwarded to the device");
        r.device().decline.store(true, Ordering::SeqCst);
        assert_eq!(BackendBase::pin(&r, &ctx, &host).unwrap().bytes(), 0, "declined twice: nothing pinned, no error");
        let upload = r.report().get(Stage::Upload);
        assert_eq!((upload.declines, upload.recomputed), (2, 1), "{}", r.report());
        let strict = Resilient::new(Tracked::default(), RecoveryPolicy { retry: false, on_decline: OnDecline::Strict });
        strict.device().decline.store(true, Ordering::SeqCst);
        assert!(
            BackendBase::pin(&strict, &ctx, &host).is_err_and(|e| e.is_decline()),
            "strict: the decline is the answer"
        );
    }

    #[test]
    fn recipes_pin_no_device_memory_and_still_recover() {
        let r = Resilient::new(Tracked::default(), RecoveryPolicy::default());
        let live = r.device().live.clone();
        let ctx = Ctx::table("t");
        let host = ColMatrix::new(2, 16, (0..32u64).map(|i| F::new(i * i + 7)).collect());
        let trace = r.upload(&ctx, &host).unwrap();
        let lde = r.coset_lde(&ctx, &trace, 2, GENERATOR).unwrap();
        assert_eq!(live.load(Ordering::SeqCst), 2);
        drop(trace);
        assert_eq!(live.load(Ordering::SeqCst), 1, "the LDE's recipe kept the trace on the device");
        // The device now declines everything, downloads too: the LDE's host
        // copy is replayed from its recipe over the trace's host copy.
        r.device().decline.store(true, Ordering::SeqCst);
        let got = r.download(&ctx, &lde).unwrap();
        let cpu = CpuBackend::new();
        let want = cpu.download(&ctx, &cpu.coset_lde(&ctx, &cpu.upload(&ctx, &host).unwrap(), 2, GENERATOR).unwrap());
        assert_eq!(got, want.unwrap());
        assert!(r.report().get(Stage::Download).recomputed > 0, "{}", r.report());
        drop(lde);
        assert_eq!(live.load(Ordering::SeqCst), 0);
    }
}
