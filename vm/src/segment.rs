//! Runs longer than one proof: a recorded execution cut into segments of
//! at most 2^k cycles, proven in two phases with shared LogUp challenges
//! ([`stark::segments`]) and checked together.
//!
//! Segment k's statement ([`crate::air::Place`]) binds the program, the
//! run's inputs and outputs, k, whether it is the last, its start state and
//! (unless last) its end state. A verifier checks that segment 0 starts
//! from the initial state, that each segment starts where the one before
//! ended, that the indices run 0..K with only the last marked last, every
//! segment's proof, and that the buses of all segments together balance:
//! the io bus against the public inputs and outputs once, the boundary
//! bus that carries memory from each segment to the next.
//!
//! Every phase of every segment is a pure function of (program, inputs,
//! segment size, options, and for phase 2 all phase-1 commitments), so
//! where and in which order segments run never changes a byte.

use crate::air::{Place, VmMachine, STATE_LEN};
use crate::exec::Execution;
use crate::isa::{Opcode, Program, NUM_REGS};
use crate::trace::{self, Segment, TraceError};
use backend_api::{Backend, ColMatrix, Ext, F};
use stark::segments::{self, MainCommitment, SegmentStatement};
use stark::{ProofOptions, ProveError};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Smallest segment: a table's smallest height.
pub const MIN_LOG_SEGMENT: u32 = crate::air::MIN_LOG_HEIGHT;
/// Largest segment: the prover's largest table height.
pub const MAX_LOG_SEGMENT: u32 = 24;

#[derive(Debug, thiserror::Error)]
pub enum SegmentError {
    #[error("segment size {0} is not a power of two between 2^{MIN_LOG_SEGMENT} and 2^{MAX_LOG_SEGMENT}")]
    Size(u64),
    #[error("the execution was not recorded (run with `record: true`)")]
    NotRecorded,
    #[error("segment {index} does not exist: the run has {count} segments")]
    Index { index: usize, count: usize },
    #[error("{0}")]
    Trace(#[from] TraceError),
    #[error("{0}")]
    Prove(#[from] ProveError),
    #[error("phase-1 commitments: {0}")]
    Commitments(String),
}

/// Where one segment sits in the recorded run.
struct Cut {
    steps: std::ops::Range<usize>,
    accesses: std::ops::Range<usize>,
    start_io: (u64, u64),
    /// Every address touched before the segment, ascending, with its value.
    live: Vec<(u64, F)>,
    place: Place,
}

/// A recorded execution cut into segments of `segment_cycles` cycles (the
/// last one shorter, padded with its final halt).
pub struct Segmented<'a> {
    pub program: &'a Program,
    pub ex: &'a Execution,
    pub segment_cycles: u64,
    cuts: Vec<Cut>,
    /// Nanoseconds spent building traces, summed over threads (reports).
    trace_ns: AtomicU64,
    /// Phase-2 prover rounds, summed over segments (reports).
    rounds: Mutex<Vec<(&'static str, Duration)>>,
}

/// The machine state before step `at` of the run (or zero past its end).
fn state(ex: &Execution, at: usize, io: (u64, u64)) -> [F; STATE_LEN] {
    let step = &ex.steps[at];
    let mut s = [F::ZERO; STATE_LEN];
    s[0] = F::new(at as u64);
    s[1] = F::new(step.pc as u64);
    s[2..2 + NUM_REGS - 1].copy_from_slice(&step.regs[1..]);
    s[NUM_REGS + 1] = F::new(io.0);
    s[NUM_REGS + 2] = F::new(io.1);
    s
}

impl<'a> Segmented<'a> {
    pub fn new(program: &'a Program, ex: &'a Execution, segment_cycles: u64) -> Result<Segmented<'a>, SegmentError> {
        let log = segment_cycles.trailing_zeros();
        if !segment_cycles.is_power_of_two() || !(MIN_LOG_SEGMENT..=MAX_LOG_SEGMENT).contains(&log) {
            return Err(SegmentError::Size(segment_cycles));
        }
        if ex.steps.is_empty() || ex.steps.len() as u64 != ex.cycles {
            return Err(SegmentError::NotRecorded);
        }
        let len = segment_cycles as usize;
        let count = ex.steps.len().div_ceil(len);
        let mut touched: BTreeMap<u64, F> = BTreeMap::new();
        let (mut io, mut access) = ((0u64, 0u64), 0usize);
        let mut cuts = Vec::with_capacity(count);
        for k in 0..count {
            let steps = k * len..((k + 1) * len).min(ex.steps.len());
            let accesses = access..access + ex.memory[access..].partition_point(|a| a.clk < steps.end as u64);
            let start = state(ex, steps.start, io);
            let live = touched.iter().map(|(&a, &v)| (a, v)).collect();
            for a in &ex.memory[accesses.clone()] {
                touched.insert(a.addr, a.value);
            }
            let start_io = io;
            for s in &ex.steps[steps.clone()] {
                match program.instructions[s.pc as usize].op {
                    Opcode::Read => io.0 += 1,
                    Opcode::Write => io.1 += 1,
                    _ => {}
                }
            }
            let is_last = k + 1 == count;
            let end = if is_last { [F::ZERO; STATE_LEN] } else { state(ex, steps.end, io) };
            access = accesses.end;
            let place = Place { index: k as u64, is_last, start, end };
            cuts.push(Cut { steps, accesses, start_io, live, place });
        }
        Ok(Segmented { program, ex, segment_cycles, cuts, trace_ns: AtomicU64::new(0), rounds: Mutex::new(vec![]) })
    }

    pub fn count(&self) -> usize {
        self.cuts.len()
    }

    /// Segment k's statement and the memory it opens with, to change: how
    /// the soundness tests build a cheating prover's segments. Never used
    /// outside tests.
    #[doc(hidden)]
    pub fn tamper(&mut self, k: usize) -> (&mut Place, &mut Vec<(u64, F)>) {
        let cut = &mut self.cuts[k];
        (&mut cut.place, &mut cut.live)
    }

    /// Keeps only the first n segments (tests: a run cut short).
    #[doc(hidden)]
    pub fn truncate(&mut self, n: usize) {
        self.cuts.truncate(n);
    }

    /// Segment k's statement and main traces.
    pub fn statement(&self, k: usize) -> Result<(VmMachine, Vec<ColMatrix>), SegmentError> {
        Ok((self.machine(k)?, self.traces(k)?))
    }

    fn cut(&self, k: usize) -> Result<&Cut, SegmentError> {
        self.cuts.get(k).ok_or(SegmentError::Index { index: k, count: self.cuts.len() })
    }

    /// Segment k's statement.
    pub fn machine(&self, k: usize) -> Result<VmMachine, SegmentError> {
        let cut = self.cut(k)?;
        Ok(VmMachine::segment(self.program, &self.ex.inputs, &self.ex.outputs, &cut.place))
    }

    /// Segment k's main traces.
    pub fn traces(&self, k: usize) -> Result<Vec<ColMatrix>, SegmentError> {
        let cut = self.cut(k)?;
        let seg = Segment {
            index: k as u64,
            is_last: cut.place.is_last,
            steps: &self.ex.steps[cut.steps.clone()],
            accesses: &self.ex.memory[cut.accesses.clone()],
            start_clk: cut.steps.start as u64,
            next_pc: self.ex.steps.get(cut.steps.end).map_or(self.ex.steps[cut.steps.end - 1].pc, |s| s.pc),
            start_io: cut.start_io,
            live: &cut.live,
        };
        let t0 = Instant::now();
        let traces = trace::generate_segment(self.program, &seg)?;
        self.trace_ns.fetch_add(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
        Ok(traces)
    }

    /// Phase-2 prover rounds so far, each summed over segments.
    pub fn round_times(&self) -> Vec<(&'static str, Duration)> {
        self.rounds.lock().expect("rounds lock").clone()
    }

    /// Time spent building traces so far, summed over threads.
    pub fn trace_time(&self) -> Duration {
        Duration::from_nanos(self.trace_ns.load(Ordering::Relaxed))
    }

    /// Phase 1 of segment k.
    pub fn commit<B: Backend>(
        &self,
        backend: &B,
        k: usize,
        options: &ProofOptions,
    ) -> Result<MainCommitment, SegmentError> {
        let (machine, traces) = self.statement(k)?;
        Ok(segments::commit_main(backend, &machine, traces, machine.publics(), options)?)
    }

    /// The shared challenges, from every segment's phase-1 commitment.
    pub fn challenges(&self, options: &ProofOptions, commitments: &[MainCommitment]) -> Result<Vec<Ext>, SegmentError> {
        if commitments.len() != self.count() {
            let msg = format!("{} commitments for {} segments", commitments.len(), self.count());
            return Err(SegmentError::Commitments(msg));
        }
        let machines = (0..self.count()).map(|k| self.machine(k)).collect::<Result<Vec<_>, _>>()?;
        shared_challenges(&machines, options, commitments).map_err(SegmentError::Commitments)
    }

    /// Phase 2 of segment k.
    pub fn prove<B: Backend>(
        &self,
        backend: &B,
        k: usize,
        options: &ProofOptions,
        shared: &[Ext],
        expected: &MainCommitment,
    ) -> Result<stark::Proof, SegmentError> {
        let (machine, traces) = self.statement(k)?;
        let (proof, stats) =
            segments::prove_segment(backend, &machine, traces, machine.publics(), options, shared, expected)?;
        let mut rounds = self.rounds.lock().expect("rounds lock");
        for (name, d) in stats.rounds {
            match rounds.iter_mut().find(|(n, _)| *n == name) {
                Some((_, total)) => *total += d,
                None => rounds.push((name, d)),
            }
        }
        Ok(proof)
    }

    /// Both phases of every segment, one after another on `backend`.
    pub fn prove_all<B: Backend>(
        &self,
        backend: &B,
        options: &ProofOptions,
    ) -> Result<Vec<stark::Proof>, SegmentError> {
        let commitments = (0..self.count()).map(|k| self.commit(backend, k, options)).collect::<Result<Vec<_>, _>>()?;
        let shared = self.challenges(options, &commitments)?;
        (0..self.count()).map(|k| self.prove(backend, k, options, &shared, &commitments[k])).collect()
    }
}

/// The shared challenges of a run's segments.
pub(crate) fn shared_challenges(
    machines: &[VmMachine],
    options: &ProofOptions,
    commitments: &[MainCommitment],
) -> Result<Vec<Ext>, String> {
    let statements: Vec<SegmentStatement<'_, VmMachine>> = machines
        .iter()
        .zip(commitments)
        .map(|(m, c)| SegmentStatement { machine: m, publics: m.publics(), commitment: c })
        .collect();
    segments::shared_challenges(options, &statements)
}
