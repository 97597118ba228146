//! The proof and its stable binary encoding: the magic bytes `KILNPRF`, a
//! little-endian u16 format version, then the proof in postcard's stable
//! wire format. Decoding untrusted bytes never panics; structural checks
//! against the statement happen in the verifier.

use crate::options::ProofOptions;
use backend_api::{Digest, Ext, RowOpening};
use serde::{Deserialize, Serialize};
use thiserror::Error;

pub const MAGIC: &[u8; 7] = b"KILNPRF";
/// 2: FRI roll-ins have their own challenge.
pub const FORMAT_VERSION: u16 = 2;

/// Out-of-domain values of one table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableOod {
    /// main[point][column]: points z * w^offset for each offset the
    /// constraints read, in increasing offset order.
    pub main: Vec<Vec<Ext>>,
    /// aux[point][base column], same points.
    pub aux: Vec<Vec<Ext>>,
    /// The quotient parts' base columns at z.
    pub quotient: Vec<Ext>,
}

/// The openings of one table at one query.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableQuery {
    pub main: RowOpening,
    pub aux: Option<RowOpening>,
    pub quotient: RowOpening,
}

/// Everything opened for one query position.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueryProof {
    pub tables: Vec<TableQuery>,
    /// One leaf per committed FRI layer.
    pub fri: Vec<RowOpening>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Proof {
    pub options: ProofOptions,
    /// log2 of each table's height, in the machine's table order.
    pub log_heights: Vec<u32>,
    pub main_roots: Vec<Digest>,
    pub aux_roots: Vec<Option<Digest>>,
    pub aux_values: Vec<Vec<Ext>>,
    pub quotient_roots: Vec<Digest>,
    pub ood: Vec<TableOod>,
    pub fri_roots: Vec<Digest>,
    /// Coefficients of the final FRI polynomial.
    pub final_poly: Vec<Ext>,
    pub pow_nonce: u64,
    pub queries: Vec<QueryProof>,
}

#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum DecodeError {
    #[error("not a Kiln proof (bad magic bytes)")]
    Magic,
    #[error("proof format version {found}, this build reads version {FORMAT_VERSION}")]
    Version { found: u16 },
    #[error("malformed proof: {0}")]
    Malformed(String),
}

impl Proof {
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(1 << 16);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        // Serializing plain data into a Vec cannot fail.
        postcard::to_io(self, &mut out).expect("proof serialization into memory");
        out
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<Proof, DecodeError> {
        if bytes.len() < MAGIC.len() + 2 || &bytes[..MAGIC.len()] != MAGIC {
            return Err(DecodeError::Magic);
        }
        let found = u16::from_le_bytes([bytes[7], bytes[8]]);
        if found != FORMAT_VERSION {
            return Err(DecodeError::Version { found });
        }
        let (proof, rest) =
            postcard::take_from_bytes::<Proof>(&bytes[9..]).map_err(|e| DecodeError::Malformed(e.to_string()))?;
        if !rest.is_empty() {
            return Err(DecodeError::Malformed(format!("{} trailing bytes", rest.len())));
        }
        Ok(proof)
    }
}
