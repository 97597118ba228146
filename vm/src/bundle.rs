//! The proof file `kiln prove` writes and `kiln verify` reads: the program,
//! the public values and the STARK proof, so a verifier needs nothing else.
//!
//! Layout: magic `KILNVMP1`; the program's canonical encoding (u64 LE
//! length, bytes); the public values (u64 LE count, canonical u64 LE
//! each); the proof's own bytes to the end.
//!
//! [`ProofBundle::verify`] checks the proof *and* the statement a caller
//! expects (program, inputs, outputs): a valid proof of some other program
//! or run is a named [`Rejection`], not a success to compare by hand.

use crate::air::{Place, StatementError, VmMachine, PUBLIC_HEADER};
use crate::isa::Program;
use backend_api::Ext;
use backend_api::F;
use stark::segments::MainCommitment;
use stark::verifier::{Acceptance, VerifyError};
use stark::Proof;

const MAGIC: &[u8; 8] = b"KILNVMP1";
/// Bounds what an untrusted file can make the decoder allocate.
const MAX_PUBLICS: u64 = 1 << 24;

pub struct ProofBundle {
    pub program: Program,
    pub publics: Vec<F>,
    pub proof: Proof,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BundleError {
    #[error("not a Kiln VM proof file (bad magic bytes)")]
    Magic,
    #[error("the proof file is truncated")]
    Truncated,
    #[error("the proof file's program is malformed: {0}")]
    Program(String),
    #[error("the proof file's public values are malformed: {0}")]
    Publics(String),
    #[error("the proof file's segments are malformed: {0}")]
    Segments(String),
    #[error("{0}")]
    Proof(#[from] stark::DecodeError),
}

fn take_u64(b: &mut &[u8]) -> Result<u64, BundleError> {
    let (v, rest) = b.split_first_chunk::<8>().ok_or(BundleError::Truncated)?;
    *b = rest;
    Ok(u64::from_le_bytes(*v))
}

impl ProofBundle {
    pub fn to_bytes(&self) -> Vec<u8> {
        let program = self.program.encode();
        let proof = self.proof.to_bytes();
        let mut out = Vec::with_capacity(8 + 16 + program.len() + 8 * self.publics.len() + proof.len());
        out.extend_from_slice(MAGIC);
        put_bytes(&mut out, &program);
        put_publics(&mut out, &self.publics);
        out.extend_from_slice(&proof);
        out
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<ProofBundle, BundleError> {
        let mut b = bytes.strip_prefix(MAGIC.as_slice()).ok_or(BundleError::Magic)?;
        let program = Program::decode(take_bytes(&mut b)?).map_err(BundleError::Program)?;
        let publics = take_publics(&mut b)?;
        let proof = Proof::from_bytes(b)?;
        Ok(ProofBundle { program, publics, proof })
    }
}

/// What a proof file proves: this program, run on these inputs, halted
/// with these outputs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Statement {
    /// BLAKE3 of the program's canonical encoding ([`Program::hash`]).
    pub program_hash: [u8; 32],
    pub inputs: Vec<F>,
    pub outputs: Vec<F>,
}

/// The statement a verifier expects; `None` leaves that part unchecked.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Expected {
    pub program_hash: Option<[u8; 32]>,
    pub inputs: Option<Vec<F>>,
    pub outputs: Option<Vec<F>>,
}

/// A verified proof file: its statement and the strength of its options.
#[derive(Clone, Debug)]
pub struct Verified {
    pub statement: Statement,
    pub options: stark::ProofOptions,
    /// log2 of each table's height, in the machine's table order.
    pub log_heights: Vec<u32>,
    /// Conjectured and provable security of the proof's options.
    pub security: stark::Security,
}

/// Why a proof file was not accepted for the expected statement.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Rejection {
    #[error("statement rejected: the proof is for program {found}, not {expected}")]
    Program { expected: String, found: String },
    #[error("statement rejected: the run read inputs {found:?}, not {expected:?}")]
    Inputs { expected: Vec<u64>, found: Vec<u64> },
    #[error("statement rejected: the run wrote outputs {found:?}, not {expected:?}")]
    Outputs { expected: Vec<u64>, found: Vec<u64> },
    #[error("{0}")]
    Statement(#[from] StatementError),
    #[error("proof rejected: {0}")]
    Proof(#[from] VerifyError),
    #[error("segmented proof rejected: {0}")]
    Segments(#[from] SegmentRejection),
}

/// The claimed statement against the expected one. It comes before the
/// proof: it is cheap, and a proof of the wrong statement is worth nothing
/// however valid.
fn check_expected(statement: &Statement, expected: &Expected) -> Result<(), Rejection> {
    if let Some(want) = expected.program_hash.filter(|h| *h != statement.program_hash) {
        return Err(Rejection::Program { expected: hex(&want), found: hex(&statement.program_hash) });
    }
    if let Some(want) = expected.inputs.as_ref().filter(|v| **v != statement.inputs) {
        return Err(Rejection::Inputs { expected: values(want), found: values(&statement.inputs) });
    }
    if let Some(want) = expected.outputs.as_ref().filter(|v| **v != statement.outputs) {
        return Err(Rejection::Outputs { expected: values(want), found: values(&statement.outputs) });
    }
    Ok(())
}

/// Lowercase hex of a hash.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn values(v: &[F]) -> Vec<u64> {
    v.iter().map(|x| x.value()).collect()
}

/// The statement public values claim for `program` (not yet verified).
fn statement_of(program: &Program, publics: &[F]) -> Result<Statement, Rejection> {
    Ok(machine_statement(program, &VmMachine::from_publics(program, publics)?))
}

/// The statement of a machine built for `program`.
fn machine_statement(program: &Program, machine: &VmMachine) -> Statement {
    Statement { program_hash: program.hash(), inputs: machine.inputs().to_vec(), outputs: machine.outputs().to_vec() }
}

impl Verified {
    /// A verified statement and the security of the options it was proven
    /// with, at its largest LDE.
    fn new(statement: Statement, options: stark::ProofOptions, log_heights: Vec<u32>) -> Verified {
        let log_max_lde = log_heights.iter().max().copied().unwrap_or(0) + options.log_blowup;
        Verified { statement, options, log_heights, security: options.security(log_max_lde) }
    }
}

impl ProofBundle {
    /// The statement the file claims (not yet verified).
    pub fn statement(&self) -> Result<Statement, Rejection> {
        statement_of(&self.program, &self.publics)
    }

    /// Checks that the claimed statement is the expected one, then the
    /// proof itself. The statement comes first: it is cheap, and a proof of
    /// the wrong statement is worth nothing however valid.
    pub fn verify(&self, expected: &Expected, acceptance: &Acceptance) -> Result<Verified, Rejection> {
        let machine = VmMachine::from_publics(&self.program, &self.publics)?;
        let statement = machine_statement(&self.program, &machine);
        check_expected(&statement, expected)?;
        stark::verify(&machine, &self.publics, &self.proof, acceptance)?;
        Ok(Verified::new(statement, self.proof.options, self.proof.log_heights.clone()))
    }
}

const SEGMENTS_MAGIC: &[u8; 8] = b"KILNVMS1";
/// Bounds the segments an untrusted file can list.
const MAX_SEGMENTS: u64 = 1 << 20;

/// The one file of a segmented run: the program, then per segment its
/// public values and proof.
///
/// Layout: magic `KILNVMS1`; the program (u64 LE length, bytes); the
/// segment count (u64 LE); per segment its public values (u64 LE count,
/// canonical u64 LE each) and its proof (u64 LE length, bytes).
pub struct SegmentedBundle {
    pub program: Program,
    pub segments: Vec<(Vec<F>, Proof)>,
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
    out.extend_from_slice(bytes);
}

fn put_publics(out: &mut Vec<u8>, publics: &[F]) {
    out.extend_from_slice(&(publics.len() as u64).to_le_bytes());
    for v in publics {
        out.extend_from_slice(&v.to_le_bytes());
    }
}

fn take_publics(b: &mut &[u8]) -> Result<Vec<F>, BundleError> {
    let count = take_u64(b)?;
    if count > MAX_PUBLICS || count * 8 > b.len() as u64 {
        return Err(BundleError::Publics(format!("{count} values do not fit the file")));
    }
    (0..count)
        .map(|i| {
            let v = take_u64(b)?;
            F::from_canonical(v).ok_or_else(|| BundleError::Publics(format!("value {i} is not canonical")))
        })
        .collect()
}

fn take_bytes<'a>(b: &mut &'a [u8]) -> Result<&'a [u8], BundleError> {
    let len = take_u64(b)?;
    if len > b.len() as u64 {
        return Err(BundleError::Truncated);
    }
    let (head, rest) = b.split_at(len as usize);
    *b = rest;
    Ok(head)
}

impl SegmentedBundle {
    pub fn to_bytes(&self) -> Vec<u8> {
        let program = self.program.encode();
        let mut out = SEGMENTS_MAGIC.to_vec();
        put_bytes(&mut out, &program);
        out.extend_from_slice(&(self.segments.len() as u64).to_le_bytes());
        for (publics, proof) in &self.segments {
            put_publics(&mut out, publics);
            put_bytes(&mut out, &proof.to_bytes());
        }
        out
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<SegmentedBundle, BundleError> {
        let mut b = bytes.strip_prefix(SEGMENTS_MAGIC.as_slice()).ok_or(BundleError::Magic)?;
        let program = Program::decode(take_bytes(&mut b)?).map_err(BundleError::Program)?;
        let count = take_u64(&mut b)?;
        if count == 0 || count > MAX_SEGMENTS || count * 16 > b.len() as u64 {
            return Err(BundleError::Segments(format!("{count} segments do not fit the file")));
        }
        let mut segments = Vec::with_capacity(count as usize);
        for _ in 0..count {
            let publics = take_publics(&mut b)?;
            let proof = Proof::from_bytes(take_bytes(&mut b)?)?;
            segments.push((publics, proof));
        }
        if !b.is_empty() {
            return Err(BundleError::Segments(format!("{} bytes after the last segment", b.len())));
        }
        Ok(SegmentedBundle { program, segments })
    }

    /// The statement the file claims (not yet verified): segment 0's.
    pub fn statement(&self) -> Result<Statement, Rejection> {
        let (publics, _) = self.segments.first().ok_or(SegmentRejection::Empty)?;
        statement_of(&self.program, publics)
    }

    /// Checks the expected statement, that the segments chain into one run
    /// from the initial state, every segment's proof with the challenges
    /// they share, and that their buses balance together. Time grows
    /// linearly with the number of segments.
    pub fn verify(&self, expected: &Expected, acceptance: &Acceptance) -> Result<Verified, Rejection> {
        let statement = self.statement()?;
        check_expected(&statement, expected)?;
        let machines = self.chain()?;
        let options = self.segments[0].1.options;
        if let Some(k) = self.segments.iter().position(|(_, p)| p.options != options) {
            return Err(SegmentRejection::Options { segment: k }.into());
        }
        let commitments: Vec<_> = self.segments.iter().map(|(_, p)| MainCommitment::of_proof(p)).collect();
        let shared = crate::segment::shared_challenges(&machines, &options, &commitments)
            .map_err(|e| Rejection::Proof(VerifyError::Shape(e)))?;
        let mut total = Ext::ZERO;
        for (k, ((publics, proof), machine)) in self.segments.iter().zip(&machines).enumerate() {
            stark::segments::verify_segment(machine, publics, proof, acceptance, &shared)
                .map_err(|error| SegmentRejection::Proof { segment: k, error })?;
            total += proof.aux_values.iter().map(|v| v[0]).sum::<Ext>();
        }
        total +=
            VmMachine::io_sum(&self.segments[0].0, &shared).map_err(|e| Rejection::Proof(VerifyError::AuxValues(e)))?;
        if !total.is_zero() {
            return Err(SegmentRejection::Buses.into());
        }
        let log_heights = self.segments.iter().flat_map(|(_, p)| p.log_heights.iter().copied()).collect();
        Ok(Verified::new(statement, options, log_heights))
    }

    /// Every segment's statement, checked to chain into one run.
    fn chain(&self) -> Result<Vec<VmMachine>, Rejection> {
        let count = self.segments.len();
        let first = &self.segments[0].0;
        let mut machines: Vec<VmMachine> = Vec::with_capacity(count);
        for (k, (publics, _)) in self.segments.iter().enumerate() {
            let machine = VmMachine::from_publics(&self.program, publics)?;
            let place = machine.place();
            let io = |p: &[F]| (p[crate::air::public::N_IN], p[crate::air::public::N_OUT], p[PUBLIC_HEADER..].to_vec());
            if io(publics) != io(first) {
                return Err(SegmentRejection::Io { segment: k }.into());
            }
            if place.index != k as u64 || place.is_last != (k + 1 == count) {
                return Err(SegmentRejection::Order { segment: k, count }.into());
            }
            let start = machines.last().map_or(Place::WHOLE_RUN.start, |m| m.place().end);
            if place.start != start {
                return Err(SegmentRejection::Start { segment: k }.into());
            }
            if place.is_last && place.end != Place::WHOLE_RUN.end {
                return Err(SegmentRejection::Start { segment: k }.into());
            }
            machines.push(machine);
        }
        Ok(machines)
    }
}

/// Why a segmented run's file was rejected, beyond what a single proof
/// can get wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SegmentRejection {
    #[error("the file has no segments")]
    Empty,
    #[error("segment {segment} states other inputs or outputs than segment 0")]
    Io { segment: usize },
    #[error("segment {segment} of {count} is out of place (wrong index or last-segment mark)")]
    Order { segment: usize, count: usize },
    #[error(
        "segment {segment} does not start where the run stood (the end of the segment before, or the initial state)"
    )]
    Start { segment: usize },
    #[error("segment {segment} was proven with other options than segment 0")]
    Options { segment: usize },
    #[error("segment {segment}: {error}")]
    Proof { segment: usize, error: VerifyError },
    #[error("the segments' LogUp buses do not balance together (memory or io differs across segments)")]
    Buses,
}

/// A proof file of either kind, told apart by its magic bytes.
pub enum AnyBundle {
    Whole(Box<ProofBundle>),
    Segmented(SegmentedBundle),
}

impl AnyBundle {
    pub fn from_bytes(bytes: &[u8]) -> Result<AnyBundle, BundleError> {
        if bytes.starts_with(SEGMENTS_MAGIC) {
            SegmentedBundle::from_bytes(bytes).map(AnyBundle::Segmented)
        } else {
            ProofBundle::from_bytes(bytes).map(|b| AnyBundle::Whole(Box::new(b)))
        }
    }

    pub fn verify(&self, expected: &Expected, acceptance: &Acceptance) -> Result<Verified, Rejection> {
        match self {
            AnyBundle::Whole(b) => b.verify(expected, acceptance),
            AnyBundle::Segmented(b) => b.verify(expected, acceptance),
        }
    }

    pub fn statement(&self) -> Result<Statement, Rejection> {
        match self {
            AnyBundle::Whole(b) => b.statement(),
            AnyBundle::Segmented(b) => b.statement(),
        }
    }

    pub fn program(&self) -> &Program {
        match self {
            AnyBundle::Whole(b) => &b.program,
            AnyBundle::Segmented(b) => &b.program,
        }
    }
}
