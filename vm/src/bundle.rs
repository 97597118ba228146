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

use crate::air::{StatementError, VmMachine};
use crate::isa::Program;
use backend_api::F;
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
        out.extend_from_slice(&(program.len() as u64).to_le_bytes());
        out.extend_from_slice(&program);
        out.extend_from_slice(&(self.publics.len() as u64).to_le_bytes());
        for v in &self.publics {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&proof);
        out
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<ProofBundle, BundleError> {
        let mut b = bytes.strip_prefix(MAGIC.as_slice()).ok_or(BundleError::Magic)?;
        let len = take_u64(&mut b)?;
        if len > b.len() as u64 {
            return Err(BundleError::Truncated);
        }
        let (prog, rest) = b.split_at(len as usize);
        let program = Program::decode(prog).map_err(BundleError::Program)?;
        b = rest;
        let count = take_u64(&mut b)?;
        if count > MAX_PUBLICS || count * 8 > b.len() as u64 {
            return Err(BundleError::Publics(format!("{count} values do not fit the file")));
        }
        let mut publics = Vec::with_capacity(count as usize);
        for i in 0..count {
            let v = take_u64(&mut b)?;
            publics
                .push(F::from_canonical(v).ok_or_else(|| BundleError::Publics(format!("value {i} is not canonical")))?);
        }
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
}

/// Lowercase hex of a hash.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn values(v: &[F]) -> Vec<u64> {
    v.iter().map(|x| x.value()).collect()
}

impl ProofBundle {
    /// The statement the file claims (not yet verified).
    pub fn statement(&self) -> Result<Statement, Rejection> {
        let machine = VmMachine::from_publics(&self.program, &self.publics)?;
        Ok(Statement {
            program_hash: self.program.hash(),
            inputs: machine.inputs().to_vec(),
            outputs: machine.outputs().to_vec(),
        })
    }

    /// Checks that the claimed statement is the expected one, then the
    /// proof itself. The statement comes first: it is cheap, and a proof of
    /// the wrong statement is worth nothing however valid.
    pub fn verify(&self, expected: &Expected, acceptance: &Acceptance) -> Result<Verified, Rejection> {
        let statement = self.statement()?;
        if let Some(want) = expected.program_hash.filter(|h| *h != statement.program_hash) {
            return Err(Rejection::Program { expected: hex(&want), found: hex(&statement.program_hash) });
        }
        if let Some(want) = expected.inputs.as_ref().filter(|v| **v != statement.inputs) {
            return Err(Rejection::Inputs { expected: values(want), found: values(&statement.inputs) });
        }
        if let Some(want) = expected.outputs.as_ref().filter(|v| **v != statement.outputs) {
            return Err(Rejection::Outputs { expected: values(want), found: values(&statement.outputs) });
        }
        let machine = VmMachine::from_publics(&self.program, &self.publics)?;
        stark::verify(&machine, &self.publics, &self.proof, acceptance)?;
        let log_heights = self.proof.log_heights.clone();
        let log_max_lde = log_heights.iter().max().copied().unwrap_or(0) + self.proof.options.log_blowup;
        let security = self.proof.options.security(log_max_lde);
        Ok(Verified { statement, options: self.proof.options, log_heights, security })
    }
}
