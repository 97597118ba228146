//! The device-memory model: pure functions giving the bytes each stage
//! needs for a table of a given shape. Device backends admit table work
//! against a byte budget with these numbers, so concurrent tables and
//! concurrent proofs share a card without over-committing it; tests pin
//! them so a change to a stage's buffers must update the model.

use crate::error::Stage;
use crate::hash::Digest;

const ELEM: u64 = 8;
const DIGEST: u64 = std::mem::size_of::<Digest>() as u64;

/// The shape of one table's work on a device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TableDims {
    pub log_n: u32,
    pub log_blowup: u32,
    pub fixed_width: u64,
    pub main_width: u64,
    /// Extension columns (three base columns each).
    pub aux_width: u64,
    /// Quotient parts (three base columns each).
    pub parts: u64,
}

impl TableDims {
    pub fn n(&self) -> u64 {
        1 << self.log_n
    }
    pub fn lde_rows(&self) -> u64 {
        1 << (self.log_n + self.log_blowup)
    }
}

/// Bytes of a Merkle tree over `rows` leaves (every layer kept).
pub fn tree_bytes(rows: u64) -> u64 {
    (2 * rows).saturating_sub(1) * DIGEST
}

/// Bytes of a `rows` x `width` base-field matrix.
pub fn matrix_bytes(rows: u64, width: u64) -> u64 {
    rows * width * ELEM
}

/// Bytes the device holds at once while running `stage` for this table:
/// its inputs, its outputs and its scratch. The widest matrix a stage
/// transforms is taken (LDE and commit run per matrix).
pub fn stage_bytes(stage: Stage, d: &TableDims) -> u64 {
    let (n, big) = (d.n(), d.lde_rows());
    let widest = d.main_width.max(3 * d.aux_width).max(d.fixed_width).max(1);
    match stage {
        Stage::Upload | Stage::Download => matrix_bytes(n, widest),
        Stage::Ntt | Stage::InverseNtt => 2 * matrix_bytes(n, widest),
        // Trace in, LDE out, plus one LDE-sized scratch for the transform.
        Stage::CosetLde => matrix_bytes(n, widest) + 2 * matrix_bytes(big, widest),
        Stage::MerkleCommit => matrix_bytes(big, widest) + tree_bytes(big),
        Stage::MerkleOpen => matrix_bytes(big, widest) + tree_bytes(big),
        // Fixed and main traces in, the aux trace out, scan partials.
        Stage::LogUp => matrix_bytes(n, d.fixed_width + d.main_width + 3 * d.aux_width) + matrix_bytes(n / 512 + 1, 6),
        // Every LDE read at once, the quotient out, and denominators.
        Stage::Compose => matrix_bytes(big, d.fixed_width + d.main_width + 3 * d.aux_width) + matrix_bytes(big, 3) * 2,
        Stage::QuotientSplit => matrix_bytes(big, 3) * 2 + matrix_bytes(big, 3 * d.parts),
        Stage::OutOfDomain => matrix_bytes(n, widest) + matrix_bytes(n, 3),
        Stage::Deep => matrix_bytes(big, d.main_width + 3 * d.aux_width + 3 * d.parts) + matrix_bytes(big, 3) * 2,
        Stage::FriFold => matrix_bytes(big, 3) + matrix_bytes(big / 2, 3),
        Stage::Grind => 1 << 20,
    }
}

/// Bytes resident for the whole prove of this table (what stays on the
/// device from its commit to the queries), plus the largest transient
/// stage on top.
pub fn table_device_set(d: &TableDims) -> u64 {
    let (n, big) = (d.n(), d.lde_rows());
    let aux = 3 * d.aux_width;
    let resident = matrix_bytes(n, d.main_width + aux)
        + matrix_bytes(big, d.main_width + aux + 3 * d.parts)
        + tree_bytes(big) * (1 + u64::from(d.aux_width > 0) + 1)
        // DEEP quotient and the FRI layers with their trees (geometric sum).
        + 2 * (matrix_bytes(big, 3) + tree_bytes(big));
    let transient = Stage::ALL.iter().map(|&s| stage_bytes(s, d)).max().unwrap_or(0);
    resident + transient
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_pins_a_2_20_by_64_table() {
        let d = TableDims { log_n: 20, log_blowup: 2, fixed_width: 0, main_width: 64, aux_width: 4, parts: 2 };
        // The LDE of 64 columns at 2^22 rows is 2 GiB.
        assert_eq!(matrix_bytes(d.lde_rows(), 64), 2 << 30);
        assert_eq!(stage_bytes(Stage::CosetLde, &d), (512 << 20) + (4 << 30));
        let set = table_device_set(&d);
        assert!(set > 3 << 30 && set < 12 << 30, "{set}");
        // Doubling the height doubles the set (within rounding of trees).
        let d2 = TableDims { log_n: 21, ..d };
        let ratio = table_device_set(&d2) as f64 / set as f64;
        assert!((ratio - 2.0).abs() < 0.01, "{ratio}");
    }
}
