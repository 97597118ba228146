//! Device-decline recovery for any backend: [`Resilient`] wraps a device
//! backend and, when it declines a stage (allocation, admission, launch or
//! transfer refused), drains the device and retries once; if it declines
//! again, either recomputes that stage with the reference backend and
//! uploads the result (`OnDecline::Recompute`), or returns the typed
//! `DeviceDecline` (`OnDecline::Strict`). Every decline, retry and
//! recompute is counted per stage and logged on one line (`log::warn!`).
//!
//! Recomputing a stage needs its inputs on the host. Each matrix therefore
//! remembers how it was made (its recipe): the host copy comes from a
//! download when the device allows one, and otherwise from replaying the
//! recipe on the reference backend. So the proof is byte-identical whichever
//! path ran, even when transfers themselves are declined.
//!
//! Host memory exhaustion (`BackendError::HostAlloc`, from either backend)
//! is not a decline: it is returned at once, neither retried nor
//! recomputed, since a recompute runs on the host and needs more of the
//! memory that just ran out.

use crate::{CpuBackend, CpuMatrix, CpuTree};
use backend_api::{
    Backend, BackendBase, BackendError, ColMatrix, ComposeInputs, ComposeOps, ConstraintSystem, Coset, Ctx,
    DeepColumns, DeepOps, DeepPoint, DeviceMatrix, DeviceTree, Digest, Ext, FriOps, HashKind, LogUp, LogUpInputs,
    LogUpOps, MerkleOps, NttOps, Result, RowOpening, Stage, F,
};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

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
/// declined, with the recipe that made it.
pub struct RMatrix<M>(Arc<Inner<M>>);

impl<M> Clone for RMatrix<M> {
    fn clone(&self) -> Self {
        RMatrix(self.0.clone())
    }
}

struct Inner<M> {
    height: usize,
    width: usize,
    dev: Option<M>,
    host: OnceLock<CpuMatrix>,
    recipe: Recipe<M>,
}

enum Recipe<M> {
    /// Made on the host (an upload's source, or a recomputed result): the
    /// host copy is always set.
    Host,
    Reshape(RMatrix<M>, usize),
    Ntt(RMatrix<M>),
    Intt(RMatrix<M>),
    Lde(RMatrix<M>, u32, F),
    LogUp(Box<LogUpRecipe<M>>),
    Compose(Box<ComposeRecipe<M>>),
    Split(RMatrix<M>, Coset, u32, usize),
    Deep(Coset, Vec<DeepRecipePoint<M>>),
    Fold(RMatrix<M>, Coset, u32, Ext, Option<(RMatrix<M>, Ext)>),
}

/// A DEEP point: z and, per matrix, its coefficients and claimed values.
type DeepRecipePoint<M> = (Ext, Vec<(RMatrix<M>, Vec<Ext>, Vec<Ext>)>);

struct LogUpRecipe<M> {
    logup: LogUp,
    main: RMatrix<M>,
    fixed: Option<RMatrix<M>>,
    z: Ext,
    alpha: Ext,
}

struct ComposeRecipe<M> {
    constraints: ConstraintSystem,
    fixed: Option<RMatrix<M>>,
    main: RMatrix<M>,
    aux: Option<RMatrix<M>>,
    log_trace_height: u32,
    domain: Coset,
    challenges: Vec<Ext>,
    publics: Vec<F>,
    aux_values: Vec<Ext>,
    alpha: Ext,
}

impl<M: DeviceMatrix> DeviceMatrix for RMatrix<M> {
    fn height(&self) -> usize {
        self.0.height
    }
    fn width(&self) -> usize {
        self.0.width
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

/// A Merkle tree on the device, or rebuilt on the host.
pub struct RTree<T> {
    dev: Option<T>,
    host: OnceLock<CpuTree>,
    root: Digest,
    leaves: usize,
    hash: HashKind,
}

impl<T: DeviceTree> DeviceTree for RTree<T> {
    fn root(&self) -> Digest {
        self.root
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
    fn attempt<T>(&self, stage: Stage, ctx: &Ctx, mut op: impl FnMut() -> Result<T>) -> Result<Option<T>> {
        let mut err = match op() {
            Ok(v) => return Ok(Some(v)),
            Err(e) if e.is_decline() => e,
            Err(e) => return Err(e),
        };
        self.count(&self.counters.declines, stage);
        if self.policy.retry {
            self.device.drain()?;
            match op() {
                Ok(v) => {
                    self.count(&self.counters.retried, stage);
                    log::warn!("{err}; drained and retried: ok");
                    return Ok(Some(v));
                }
                Err(e) if e.is_decline() => {
                    self.count(&self.counters.declines, stage);
                    err = e;
                }
                Err(e) => return Err(e),
            }
        }
        match self.policy.on_decline {
            OnDecline::Strict => Err(err),
            OnDecline::Recompute => {
                self.count(&self.counters.recomputed, stage);
                log::warn!("{err}; recomputing {stage} for table {} on the reference backend", ctx.table);
                Ok(None)
            }
        }
    }

    /// The host copy of a matrix: cached, downloaded, or replayed.
    fn host(&self, ctx: &Ctx, m: &RMatrix<B::Matrix>) -> Result<CpuMatrix> {
        if let Some(h) = m.0.host.get() {
            return Ok(h.clone());
        }
        let downloaded = match m.dev() {
            Some(d) => self.attempt(Stage::Download, ctx, || self.device.download(ctx, d))?,
            None => None,
        };
        let h = match downloaded {
            Some(h) => CpuMatrix::from_host(&h),
            None => self.replay(ctx, &m.0.recipe)?,
        };
        Ok(m.0.host.get_or_init(|| h).clone())
    }

    /// Recomputes a matrix from its recipe on the reference backend.
    fn replay(&self, ctx: &Ctx, recipe: &Recipe<B::Matrix>) -> Result<CpuMatrix> {
        let cpu = &self.reference;
        match recipe {
            Recipe::Host => Err(BackendError::Device {
                stage: Stage::Download,
                table: ctx.table.to_string(),
                message: "host copy of a host-made matrix is missing".into(),
            }),
            Recipe::Reshape(m, h) => cpu.reshape(ctx, &self.host(ctx, m)?, *h),
            Recipe::Ntt(m) => cpu.ntt(ctx, &self.host(ctx, m)?),
            Recipe::Intt(m) => cpu.intt(ctx, &self.host(ctx, m)?),
            Recipe::Lde(m, lb, s) => cpu.coset_lde(ctx, &self.host(ctx, m)?, *lb, *s),
            Recipe::LogUp(l) => {
                let main = self.host(ctx, &l.main)?;
                let fixed = l.fixed.as_ref().map(|f| self.host(ctx, f)).transpose()?;
                let inputs =
                    LogUpInputs { logup: &l.logup, main: &main, fixed: fixed.as_ref(), z: l.z, alpha: l.alpha };
                cpu.logup_aux(ctx, &inputs).map(|(m, _)| m)
            }
            Recipe::Compose(c) => {
                let fixed = c.fixed.as_ref().map(|m| self.host(ctx, m)).transpose()?;
                let main = self.host(ctx, &c.main)?;
                let aux = c.aux.as_ref().map(|m| self.host(ctx, m)).transpose()?;
                cpu.compose(
                    ctx,
                    &ComposeInputs {
                        constraints: &c.constraints,
                        fixed: fixed.as_ref(),
                        main: &main,
                        aux: aux.as_ref(),
                        log_trace_height: c.log_trace_height,
                        domain: c.domain,
                        challenges: &c.challenges,
                        publics: &c.publics,
                        aux_values: &c.aux_values,
                        alpha: c.alpha,
                    },
                )
            }
            Recipe::Split(q, d, log_n, parts) => cpu.split_quotient(ctx, &self.host(ctx, q)?, *d, *log_n, *parts),
            Recipe::Deep(domain, points) => {
                let hosts: Vec<Vec<CpuMatrix>> = points
                    .iter()
                    .map(|(_, cols)| cols.iter().map(|(m, _, _)| self.host(ctx, m)).collect::<Result<_>>())
                    .collect::<Result<_>>()?;
                let pts: Vec<DeepPoint<CpuMatrix>> = points
                    .iter()
                    .zip(&hosts)
                    .map(|((z, cols), hs)| DeepPoint {
                        point: *z,
                        columns: cols
                            .iter()
                            .zip(hs)
                            .map(|((_, c, v), h)| DeepColumns { matrix: h, coeffs: c.clone(), values: v.clone() })
                            .collect(),
                    })
                    .collect();
                cpu.deep_quotient(ctx, *domain, &pts)
            }
            Recipe::Fold(layer, d, la, beta, roll) => {
                let l = self.host(ctx, layer)?;
                let r = roll.as_ref().map(|(g, s)| Ok::<_, BackendError>((self.host(ctx, g)?, *s))).transpose()?;
                cpu.fri_fold(ctx, &l, *d, *la, *beta, r.as_ref().map(|(g, s)| (g, *s)))
            }
        }
    }

    /// Runs a matrix-producing stage: on the device when every input is
    /// there, else (or after an unrecovered decline) on the reference
    /// backend, whose result is uploaded when the device accepts it.
    fn matrix_stage(
        &self,
        stage: Stage,
        ctx: &Ctx,
        inputs_on_device: bool,
        op: impl FnMut() -> Result<B::Matrix>,
        recipe: Recipe<B::Matrix>,
        shape: (usize, usize),
    ) -> Result<RMatrix<B::Matrix>> {
        if inputs_on_device {
            if let Some(dev) = self.attempt(stage, ctx, op)? {
                return Ok(RMatrix(Arc::new(Inner {
                    height: dev.height(),
                    width: dev.width(),
                    dev: Some(dev),
                    host: OnceLock::new(),
                    recipe,
                })));
            }
        }
        let host = self.replay(ctx, &recipe)?;
        let dev = self.attempt(Stage::Upload, ctx, || self.device.upload(ctx, &host.to_host()))?;
        debug_assert_eq!((host.height(), host.width()), shape);
        Ok(RMatrix(Arc::new(Inner {
            height: host.height(),
            width: host.width(),
            dev,
            host: OnceLock::from(host),
            recipe: Recipe::Host,
        })))
    }
}

fn all_dev<M>(ms: &[&RMatrix<M>]) -> bool {
    ms.iter().all(|m| m.on_device())
}

impl<B: Backend> BackendBase for Resilient<B> {
    type Matrix = RMatrix<B::Matrix>;
    type Tree = RTree<B::Tree>;

    fn name(&self) -> &str {
        &self.name
    }

    fn upload(&self, ctx: &Ctx, m: &ColMatrix) -> Result<Self::Matrix> {
        let dev = self.attempt(Stage::Upload, ctx, || self.device.upload(ctx, m))?;
        Ok(RMatrix(Arc::new(Inner {
            height: m.height(),
            width: m.width(),
            dev,
            host: OnceLock::from(CpuMatrix::from_host(m)),
            recipe: Recipe::Host,
        })))
    }

    fn download(&self, ctx: &Ctx, m: &Self::Matrix) -> Result<ColMatrix> {
        Ok(self.host(ctx, m)?.to_host())
    }

    fn reshape(&self, ctx: &Ctx, m: &Self::Matrix, height: usize) -> Result<Self::Matrix> {
        backend_api::validate::reshape(m, height)?;
        let shape = (height, m.width() * m.height() / height);
        self.matrix_stage(
            Stage::MerkleCommit,
            ctx,
            m.on_device(),
            || self.device.reshape(ctx, m.dev().expect("on device"), height),
            Recipe::Reshape(m.clone(), height),
            shape,
        )
    }

    fn drain(&self) -> Result<()> {
        self.device.drain()
    }
}

impl<B: Backend> NttOps for Resilient<B> {
    fn ntt(&self, ctx: &Ctx, m: &Self::Matrix) -> Result<Self::Matrix> {
        backend_api::validate::ntt(Stage::Ntt, m)?;
        let shape = (m.height(), m.width());
        self.matrix_stage(
            Stage::Ntt,
            ctx,
            m.on_device(),
            || self.device.ntt(ctx, m.dev().expect("on device")),
            Recipe::Ntt(m.clone()),
            shape,
        )
    }

    fn intt(&self, ctx: &Ctx, m: &Self::Matrix) -> Result<Self::Matrix> {
        backend_api::validate::ntt(Stage::InverseNtt, m)?;
        let shape = (m.height(), m.width());
        self.matrix_stage(
            Stage::InverseNtt,
            ctx,
            m.on_device(),
            || self.device.intt(ctx, m.dev().expect("on device")),
            Recipe::Intt(m.clone()),
            shape,
        )
    }

    fn coset_lde(&self, ctx: &Ctx, m: &Self::Matrix, log_blowup: u32, shift: F) -> Result<Self::Matrix> {
        backend_api::validate::coset_lde(m, log_blowup, shift)?;
        let shape = (m.height() << log_blowup, m.width());
        self.matrix_stage(
            Stage::CosetLde,
            ctx,
            m.on_device(),
            || self.device.coset_lde(ctx, m.dev().expect("on device"), log_blowup, shift),
            Recipe::Lde(m.clone(), log_blowup, shift),
            shape,
        )
    }
}

impl<B: Backend> MerkleOps for Resilient<B> {
    fn commit(&self, ctx: &Ctx, m: &Self::Matrix, hash: HashKind) -> Result<Self::Tree> {
        backend_api::validate::commit(m)?;
        if let Some(d) = m.dev() {
            if let Some(tree) = self.attempt(Stage::MerkleCommit, ctx, || self.device.commit(ctx, d, hash))? {
                return Ok(RTree {
                    root: tree.root(),
                    leaves: tree.leaves(),
                    hash,
                    dev: Some(tree),
                    host: OnceLock::new(),
                });
            }
        }
        let tree = self.reference.commit(ctx, &self.host(ctx, m)?, hash)?;
        Ok(RTree { root: tree.root(), leaves: tree.leaves(), hash, dev: None, host: OnceLock::from(tree) })
    }

    fn open(&self, ctx: &Ctx, m: &Self::Matrix, tree: &Self::Tree, rows: &[usize]) -> Result<Vec<RowOpening>> {
        backend_api::validate::open(m, tree, rows)?;
        if let (Some(d), Some(t)) = (m.dev(), &tree.dev) {
            if let Some(o) = self.attempt(Stage::MerkleOpen, ctx, || self.device.open(ctx, d, t, rows))? {
                return Ok(o);
            }
        }
        let host = self.host(ctx, m)?;
        let cpu_tree = match tree.host.get() {
            Some(t) => t,
            None => {
                let t = self.reference.commit(ctx, &host, tree.hash)?;
                tree.host.get_or_init(|| t)
            }
        };
        self.reference.open(ctx, &host, cpu_tree, rows)
    }
}

impl<B: Backend> LogUpOps for Resilient<B> {
    fn logup_aux(&self, ctx: &Ctx, i: &LogUpInputs<Self::Matrix>) -> Result<(Self::Matrix, Ext)> {
        backend_api::validate::logup_aux(i)?;
        let mut ins = vec![i.main];
        ins.extend(i.fixed);
        let recipe = Recipe::LogUp(Box::new(LogUpRecipe {
            logup: i.logup.clone(),
            main: i.main.clone(),
            fixed: i.fixed.cloned(),
            z: i.z,
            alpha: i.alpha,
        }));
        let mut device_sum = None;
        let m = self.matrix_stage(
            Stage::LogUp,
            ctx,
            all_dev(&ins),
            || {
                let (m, sum) = self.device.logup_aux(ctx, &i.map(|m| m.dev().expect("on device")))?;
                device_sum = Some(sum);
                Ok(m)
            },
            recipe,
            (i.main.height(), 3 * i.logup.aux_width()),
        )?;
        let sum = match (m.on_device(), device_sum) {
            (true, Some(sum)) => sum,
            // Recomputed: the sum is the running-sum column's last row.
            _ => self.host(ctx, &m)?.get_ext(m.height() - 1, i.logup.interactions()),
        };
        Ok((m, sum))
    }
}

impl<B: Backend> ComposeOps for Resilient<B> {
    fn compose(&self, ctx: &Ctx, i: &ComposeInputs<Self::Matrix>) -> Result<Self::Matrix> {
        backend_api::validate::compose(i)?;
        let mut ins = vec![i.main];
        ins.extend(i.fixed);
        ins.extend(i.aux);
        let recipe = Recipe::Compose(Box::new(ComposeRecipe {
            constraints: i.constraints.clone(),
            fixed: i.fixed.cloned(),
            main: i.main.clone(),
            aux: i.aux.cloned(),
            log_trace_height: i.log_trace_height,
            domain: i.domain,
            challenges: i.challenges.to_vec(),
            publics: i.publics.to_vec(),
            aux_values: i.aux_values.to_vec(),
            alpha: i.alpha,
        }));
        self.matrix_stage(
            Stage::Compose,
            ctx,
            all_dev(&ins),
            || self.device.compose(ctx, &i.map(|m| m.dev().expect("on device"))),
            recipe,
            (i.domain.size(), 3),
        )
    }

    fn split_quotient(
        &self,
        ctx: &Ctx,
        q: &Self::Matrix,
        domain: Coset,
        log_trace_height: u32,
        parts: usize,
    ) -> Result<Self::Matrix> {
        backend_api::validate::split_quotient(q, domain, log_trace_height, parts)?;
        self.matrix_stage(
            Stage::QuotientSplit,
            ctx,
            q.on_device(),
            || self.device.split_quotient(ctx, q.dev().expect("on device"), domain, log_trace_height, parts),
            Recipe::Split(q.clone(), domain, log_trace_height, parts),
            (domain.size(), 3 * parts),
        )
    }
}

impl<B: Backend> DeepOps for Resilient<B> {
    fn evaluate_at(&self, ctx: &Ctx, m: &Self::Matrix, domain: Coset, points: &[Ext]) -> Result<Vec<Vec<Ext>>> {
        backend_api::validate::evaluate_at(m, domain)?;
        if let Some(d) = m.dev() {
            if let Some(v) =
                self.attempt(Stage::OutOfDomain, ctx, || self.device.evaluate_at(ctx, d, domain, points))?
            {
                return Ok(v);
            }
        }
        self.reference.evaluate_at(ctx, &self.host(ctx, m)?, domain, points)
    }

    fn deep_quotient(&self, ctx: &Ctx, domain: Coset, points: &[DeepPoint<Self::Matrix>]) -> Result<Self::Matrix> {
        backend_api::validate::deep(domain, points)?;
        let on_device = points.iter().all(|p| p.columns.iter().all(|c| c.matrix.on_device()));
        let recipe = Recipe::Deep(
            domain,
            points
                .iter()
                .map(|p| {
                    (
                        p.point,
                        p.columns.iter().map(|c| (c.matrix.clone(), c.coeffs.clone(), c.values.clone())).collect(),
                    )
                })
                .collect(),
        );
        self.matrix_stage(
            Stage::Deep,
            ctx,
            on_device,
            || {
                let pts: Vec<DeepPoint<B::Matrix>> =
                    points.iter().map(|p| p.map(|m| m.dev().expect("on device"))).collect();
                self.device.deep_quotient(ctx, domain, &pts)
            },
            recipe,
            (domain.size(), 3),
        )
    }
}

impl<B: Backend> FriOps for Resilient<B> {
    fn fri_fold(
        &self,
        ctx: &Ctx,
        layer: &Self::Matrix,
        domain: Coset,
        log_arity: u32,
        beta: Ext,
        roll_in: Option<(&Self::Matrix, Ext)>,
    ) -> Result<Self::Matrix> {
        backend_api::validate::fri_fold(layer, domain, log_arity, roll_in.map(|(g, _)| g))?;
        let on_device = layer.on_device() && roll_in.is_none_or(|(g, _)| g.on_device());
        self.matrix_stage(
            Stage::FriFold,
            ctx,
            on_device,
            || {
                self.device.fri_fold(
                    ctx,
                    layer.dev().expect("on device"),
                    domain,
                    log_arity,
                    beta,
                    roll_in.map(|(g, s)| (g.dev().expect("on device"), s)),
                )
            },
            Recipe::Fold(layer.clone(), domain, log_arity, beta, roll_in.map(|(g, s)| (g.clone(), s))),
            (domain.size() >> log_arity, 3),
        )
    }

    fn grind(&self, ctx: &Ctx, hash: HashKind, seed: &Digest, bits: u32) -> Result<u64> {
        backend_api::validate::grind(bits)?;
        match self.attempt(Stage::Grind, ctx, || self.device.grind(ctx, hash, seed, bits))? {
            Some(n) => Ok(n),
            None => self.reference.grind(ctx, hash, seed, bits),
        }
    }
}
