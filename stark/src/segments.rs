//! One statement proven as a sequence of segment proofs whose LogUp buses
//! balance only together (a machine's cross-segment memory, say).
//!
//! Two phases. First every segment's main traces are committed
//! ([`commit_main`]); the LogUp challenges are then drawn once from all the
//! segments' statements and main roots ([`shared_challenges`]). Second,
//! every segment is proven with those challenges ([`prove_segment`]), which
//! recommits its main traces (a segment keeps nothing between the phases,
//! so phases may run on different devices or hosts) and refuses to go on
//! if they no longer give the phase-1 roots. A verifier checks each
//! segment with the same challenges ([`verify_segment`]) and then the bus
//! sums of all segments together, which only the machine knows how to do.
//!
//! Soundness: the shared challenges are a hash of every main commitment
//! of every segment, so no segment's main trace can be chosen after them;
//! each segment's later challenges come from its own transcript, which
//! absorbs the shared ones first.

use crate::air::Machine;
use crate::options::ProofOptions;
use crate::proof::Proof;
use crate::protocol::{self, Challenges};
use crate::prover::{self, ProveError, ProveStats};
use crate::transcript::Transcript;
use crate::verifier::{self, Acceptance, VerifyError};
use backend_api::{Backend, ColMatrix, Digest, Ext, F};

/// Domain separation of the shared-challenge transcript.
pub const SEGMENTS_PROTOCOL: &[u8] = b"kiln-segments-v1";

/// A segment's first phase: its tables' heights and main roots.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MainCommitment {
    pub log_heights: Vec<u32>,
    pub roots: Vec<Digest>,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CommitmentDecodeError {
    #[error("not a segment commitment (bad magic bytes)")]
    Magic,
    #[error("the segment commitment is truncated or has trailing bytes")]
    Length,
    #[error("the segment commitment lists {0} tables, more than any machine has")]
    TooManyTables(u64),
}

const MAGIC: &[u8; 8] = b"KILNSEG1";
const MAX_TABLES: u64 = 1 << 10;

impl MainCommitment {
    /// Magic, table count (u64 LE), then per table its log height (u32 LE)
    /// and main root.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&(self.roots.len() as u64).to_le_bytes());
        for (h, r) in self.log_heights.iter().zip(&self.roots) {
            out.extend_from_slice(&h.to_le_bytes());
            out.extend_from_slice(r);
        }
        out
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<MainCommitment, CommitmentDecodeError> {
        let rest = bytes.strip_prefix(MAGIC.as_slice()).ok_or(CommitmentDecodeError::Magic)?;
        let (count, mut rest) = rest.split_first_chunk::<8>().ok_or(CommitmentDecodeError::Length)?;
        let count = u64::from_le_bytes(*count);
        if count > MAX_TABLES {
            return Err(CommitmentDecodeError::TooManyTables(count));
        }
        if rest.len() as u64 != count * 36 {
            return Err(CommitmentDecodeError::Length);
        }
        let mut c = MainCommitment { log_heights: vec![], roots: vec![] };
        while let Some((h, tail)) = rest.split_first_chunk::<4>() {
            let (r, tail) = tail.split_first_chunk::<32>().ok_or(CommitmentDecodeError::Length)?;
            c.log_heights.push(u32::from_le_bytes(*h));
            c.roots.push(*r);
            rest = tail;
        }
        Ok(c)
    }

    /// What a finished segment proof committed to in its main round.
    pub fn of_proof(proof: &Proof) -> MainCommitment {
        MainCommitment { log_heights: proof.log_heights.clone(), roots: proof.main_roots.clone() }
    }
}

/// Phase 1 for one segment: its main traces committed, only the roots kept.
pub fn commit_main<B: Backend, M: Machine + ?Sized>(
    backend: &B,
    machine: &M,
    traces: Vec<ColMatrix>,
    publics: &[F],
    options: &ProofOptions,
) -> Result<MainCommitment, ProveError> {
    let log_heights = traces.iter().map(|t| t.height().trailing_zeros()).collect();
    let roots = prover::main_roots(backend, machine, traces, publics, options)?;
    Ok(MainCommitment { log_heights, roots })
}

/// One segment's statement as the shared challenges see it.
pub struct SegmentStatement<'a, M: Machine + ?Sized> {
    pub machine: &'a M,
    pub publics: &'a [F],
    pub commitment: &'a MainCommitment,
}

/// The LogUp challenges of every segment: drawn from all segments'
/// statements and main commitments, in segment order.
pub fn shared_challenges<M: Machine + ?Sized>(
    options: &ProofOptions,
    segments: &[SegmentStatement<'_, M>],
) -> Result<Vec<Ext>, String> {
    let first = segments.first().ok_or("no segments")?;
    let count = first.machine.num_challenges();
    let mut tr = Transcript::new(options.hash, SEGMENTS_PROTOCOL);
    tr.absorb_u64(b"segments", segments.len() as u64);
    for (k, s) in segments.iter().enumerate() {
        let tables = s.machine.tables();
        let c = s.commitment;
        if c.log_heights.len() != tables.len() || c.roots.len() != tables.len() {
            return Err(format!("segment {k}: {} commitments for {} tables", c.roots.len(), tables.len()));
        }
        if s.machine.num_challenges() != count {
            return Err(format!("segment {k}: its machine draws another number of challenges"));
        }
        protocol::absorb_statement(&mut tr, &tables, options, &c.log_heights, s.publics);
        for root in &c.roots {
            tr.absorb_digest(b"main-root", root);
        }
    }
    Ok((0..count).map(|_| tr.challenge_ext(b"challenge")).collect())
}

/// Phase 2 for one segment: the whole proof with the shared challenges.
/// `expected` is its phase-1 commitment: a prover that no longer commits
/// to the same traces (a nondeterministic witness, another program build)
/// stops here rather than emit a proof the set will reject.
pub fn prove_segment<B: Backend, M: Machine + ?Sized>(
    backend: &B,
    machine: &M,
    traces: Vec<ColMatrix>,
    publics: &[F],
    options: &ProofOptions,
    shared: &[Ext],
    expected: &MainCommitment,
) -> Result<(Proof, ProveStats), ProveError> {
    let (proof, stats) = prover::prove_as(
        prover::Conduct::Honest,
        backend,
        machine,
        traces,
        publics,
        options,
        Challenges::Shared(shared),
        &prover::ProveSettings::default(),
    )?;
    let got = MainCommitment::of_proof(&proof);
    if got != *expected {
        let tables = machine.tables();
        let which: Vec<&str> = (0..tables.len())
            .filter(|&t| {
                got.roots.get(t) != expected.roots.get(t) || got.log_heights.get(t) != expected.log_heights.get(t)
            })
            .map(|t| tables[t].name())
            .collect();
        return Err(ProveError::Statement(format!(
            "the segment's main commitment differs from its first phase (tables {}): its traces or proof options \
             (hash, blowup) changed between the phases, or a backend is not deterministic",
            which.join(", ")
        )));
    }
    Ok((proof, stats))
}

/// Verifies one segment's proof against the shared challenges; the bus
/// sums (`proof.aux_values`) are the caller's to check across segments.
pub fn verify_segment<M: Machine + ?Sized>(
    machine: &M,
    publics: &[F],
    proof: &Proof,
    acceptance: &Acceptance,
    shared: &[Ext],
) -> Result<(), VerifyError> {
    verifier::verify_with(machine, publics, proof, acceptance, Challenges::Shared(shared))
}
