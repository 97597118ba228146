//! Many proofs at once: a batch of statements proven concurrently on one
//! backend ([`prove_batch`]) or spread over several, one per device
//! ([`prove_spread`]). Each backend runs `per_backend` proofs at a time
//! from one queue, heaviest device set first, so the largest proofs are
//! not left for last; a backend with a memory gate admits each proof
//! against its budget (`BackendBase::reserve`). Placement and completion
//! order never change a proof: each is the same function of its statement
//! on every backend, and results come back in the order given.

use crate::air::Machine;
use crate::options::ProofOptions;
use crate::proof::Proof;
use crate::prover::{device_set, prove, ProveError};
use backend_api::{Backend, ColMatrix, F};
use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// One statement to prove: a machine, one trace per table, the publics.
/// Traces are shared buffers, so a statement repeated costs no copy.
#[derive(Clone)]
pub struct Statement<'a> {
    pub machine: &'a dyn Machine,
    pub traces: Vec<ColMatrix>,
    pub publics: Vec<F>,
}

/// The order proofs start in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BatchOrder {
    /// Largest device set first (the memory model's bytes).
    #[default]
    HeaviestFirst,
    /// The order given.
    AsGiven,
}

/// How a batch runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchConfig {
    /// Proofs in flight on each backend at once (at least 1).
    pub per_backend: usize,
    pub order: BatchOrder,
}

impl Default for BatchConfig {
    fn default() -> BatchConfig {
        BatchConfig { per_backend: 2, order: BatchOrder::HeaviestFirst }
    }
}

/// One proof of a batch: its result, the backend (index into the slice
/// given) it ran on, and when it started and how long it took.
#[derive(Debug)]
pub struct BatchProof {
    pub result: Result<Proof, ProveError>,
    pub backend: usize,
    pub started: Duration,
    pub elapsed: Duration,
}

/// A batch's proofs, in the order the statements were given.
#[derive(Debug)]
pub struct BatchReport {
    pub proofs: Vec<BatchProof>,
    pub wall: Duration,
}

impl BatchReport {
    /// Proofs per second over the batch's wall time.
    pub fn throughput(&self) -> f64 {
        self.proofs.len() as f64 / self.wall.as_secs_f64().max(1e-9)
    }

    /// How many proofs each backend ran.
    pub fn per_backend(&self, backends: usize) -> Vec<usize> {
        let mut n = vec![0; backends];
        for p in &self.proofs {
            if let Some(c) = n.get_mut(p.backend) {
                *c += 1;
            }
        }
        n
    }
}

/// The order statements of these weights start in.
pub fn schedule(weights: &[u64], order: BatchOrder) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..weights.len()).collect();
    if order == BatchOrder::HeaviestFirst {
        idx.sort_by_key(|&i| std::cmp::Reverse(weights[i]));
    }
    idx
}

/// Proves every statement on `backend`, `config.per_backend` at a time.
pub fn prove_batch<B: Backend>(
    backend: &B,
    statements: &[Statement],
    options: &ProofOptions,
    config: BatchConfig,
) -> BatchReport {
    prove_spread(&[backend], statements, options, config)
}

/// Proves every statement on the backends given (one per device, say),
/// each running `config.per_backend` proofs at a time from one shared
/// queue. The proofs run on threads of their own, not on rayon's pool, so
/// one waiting for memory never holds up the tables of another.
pub fn prove_spread<B: Backend>(
    backends: &[&B],
    statements: &[Statement],
    options: &ProofOptions,
    config: BatchConfig,
) -> BatchReport {
    let start = Instant::now();
    let weights: Vec<u64> = statements
        .iter()
        .map(|s| device_set(s.machine, &s.traces, &s.publics, options).map_or(0, |d| d.bytes()))
        .collect();
    let queue = Mutex::new(schedule(&weights, config.order).into_iter().collect::<VecDeque<usize>>());
    let done: Mutex<Vec<Option<BatchProof>>> = Mutex::new(statements.iter().map(|_| None).collect());
    let workers = config.per_backend.max(1);
    std::thread::scope(|scope| {
        for (b, backend) in backends.iter().enumerate() {
            for _ in 0..workers {
                let (queue, done) = (&queue, &done);
                scope.spawn(move || loop {
                    let Some(i) = queue.lock().unwrap_or_else(|p| p.into_inner()).pop_front() else { break };
                    let s = &statements[i];
                    let t0 = Instant::now();
                    let result = prove(*backend, s.machine, s.traces.clone(), &s.publics, options);
                    let proof = BatchProof { result, backend: b, started: t0 - start, elapsed: t0.elapsed() };
                    done.lock().unwrap_or_else(|p| p.into_inner())[i] = Some(proof);
                });
            }
        }
    });
    let proofs = done.into_inner().unwrap_or_else(|p| p.into_inner());
    let proofs = proofs
        .into_iter()
        .map(|p| {
            p.unwrap_or_else(|| BatchProof {
                result: Err(ProveError::Statement("no backend to prove on".into())),
                backend: usize::MAX,
                started: Duration::ZERO,
                elapsed: Duration::ZERO,
            })
        })
        .collect();
    BatchReport { proofs, wall: start.elapsed() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::examples::{Cubic, TwoTables};
    use crate::SingleTable;
    use backend_api::memory::{DeviceSet, Reservation};
    use backend_api::{Ctx, Lane, Wrapper};
    use backend_cpu::CpuBackend;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    fn options() -> ProofOptions {
        ProofOptions { log_blowup: 1, num_queries: 8, grinding_bits: 2, ..ProofOptions::default() }
    }

    /// A CPU backend that counts the proofs it holds at once (through its
    /// reservations).
    #[derive(Default)]
    struct Counting {
        cpu: CpuBackend,
        now: Arc<AtomicUsize>,
        most: Arc<AtomicUsize>,
        proofs: AtomicUsize,
    }

    struct Held(Arc<AtomicUsize>);
    impl Drop for Held {
        fn drop(&mut self) {
            self.0.fetch_sub(1, Ordering::SeqCst);
        }
    }

    impl Wrapper for Counting {
        type Inner = CpuBackend;
        fn inner(&self) -> &CpuBackend {
            &self.cpu
        }
        fn reserve(&self, _ctx: &Ctx, _lanes: &[Lane], _set: &DeviceSet) -> backend_api::Result<Reservation> {
            let n = self.now.fetch_add(1, Ordering::SeqCst) + 1;
            self.most.fetch_max(n, Ordering::SeqCst);
            self.proofs.fetch_add(1, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(5));
            Ok(Reservation::held(0, Box::new(Held(self.now.clone()))))
        }
    }

    #[test]
    fn heaviest_first_then_in_order_given() {
        assert_eq!(schedule(&[5, 9, 1, 9], BatchOrder::HeaviestFirst), vec![1, 3, 0, 2]);
        assert_eq!(schedule(&[5, 9, 1], BatchOrder::AsGiven), vec![0, 1, 2]);
    }

    #[test]
    fn a_batch_spread_over_backends_gives_the_proofs_of_one_prove_each() {
        let o = options();
        let two = TwoTables::default();
        let cubic = SingleTable(Cubic::new(4));
        let mut statements = vec![];
        for k in 0..6u64 {
            if k % 2 == 0 {
                statements.push(Statement { machine: &two, traces: TwoTables::traces(5, k), publics: vec![] });
            } else {
                let (t, p) = cubic.0.trace(5 + (k as u32 % 3), k);
                statements.push(Statement { machine: &cubic, traces: vec![t], publics: p });
            }
        }
        let want: Vec<Vec<u8>> = statements
            .iter()
            .map(|s| prove(&CpuBackend::new(), s.machine, s.traces.clone(), &s.publics, &o).unwrap().to_bytes())
            .collect();
        let (a, b) = (Counting::default(), Counting::default());
        let config = BatchConfig { per_backend: 2, order: BatchOrder::HeaviestFirst };
        let report = prove_spread(&[&a, &b], &statements, &o, config);
        for (k, p) in report.proofs.iter().enumerate() {
            let got = p.result.as_ref().unwrap_or_else(|e| panic!("statement {k}: {e}")).to_bytes();
            assert_eq!(got, want[k], "statement {k} on backend {} differs", p.backend);
        }
        let per = report.per_backend(2);
        assert_eq!(per.iter().sum::<usize>(), 6);
        assert_eq!(per, vec![a.proofs.load(Ordering::SeqCst), b.proofs.load(Ordering::SeqCst)]);
        assert!(per.iter().all(|&n| n > 0), "a backend got nothing: {per:?}");
        assert!(a.most.load(Ordering::SeqCst) <= 2 && b.most.load(Ordering::SeqCst) <= 2);
        assert!(report.throughput() > 0.0);
    }

    #[test]
    fn a_bad_statement_fails_alone() {
        let o = options();
        let two = TwoTables::default();
        let good = Statement { machine: &two, traces: TwoTables::traces(5, 1), publics: vec![] };
        let bad = Statement { machine: &two, traces: vec![], publics: vec![] };
        let report = prove_batch(&CpuBackend::new(), &[good.clone(), bad, good], &o, BatchConfig::default());
        assert!(report.proofs[0].result.is_ok() && report.proofs[2].result.is_ok());
        assert!(matches!(report.proofs[1].result, Err(ProveError::Statement(_))));
    }
}
