//! The proof file `kiln prove` writes and `kiln verify` reads: the program,
//! the public values and the STARK proof, so a verifier needs nothing else.
//!
//! Layout: magic `KILNVMP1`; the program's canonical encoding (u64 LE
//! length, bytes); the public values (u64 LE count, canonical u64 LE
//! each); the proof's own bytes to the end.

use crate::isa::Program;
use backend_api::F;
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
