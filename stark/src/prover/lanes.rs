//! Where a proof's device work runs and what it reserves: one lane per
//! table (its stage chain), one per DEEP height group, one for FRI; the
//! device set the memory model gives its tables; the order tables start
//! in (heaviest first, so the largest is not the last to begin).

use super::spill::Residency;
use crate::options::ProofOptions;
use crate::protocol::TableShape;
use backend_api::memory::{table_device_set, DeviceSet, TableDims};
use backend_api::Lane;

/// The lanes of one proof.
pub(crate) struct Lanes {
    pub tables: Vec<Lane>,
    /// (log LDE height, lane) of each DEEP group, tallest first.
    pub deep: Vec<(u32, Lane)>,
    pub fri: Lane,
}

impl Lanes {
    pub fn new(shapes: &[TableShape]) -> Lanes {
        let mut heights: Vec<u32> = shapes.iter().map(|s| s.log_lde).collect();
        heights.sort_unstable_by(|a, b| b.cmp(a));
        heights.dedup();
        Lanes {
            tables: shapes.iter().map(|_| Lane::fresh()).collect(),
            deep: heights.into_iter().map(|h| (h, Lane::fresh())).collect(),
            fri: Lane::fresh(),
        }
    }

    pub fn deep(&self, log_lde: u32) -> Lane {
        self.deep.iter().find(|(h, _)| *h == log_lde).map_or(Lane::NONE, |(_, l)| *l)
    }

    pub fn all(&self) -> Vec<Lane> {
        self.tables.iter().copied().chain(self.deep.iter().map(|(_, l)| *l)).chain([self.fri]).collect()
    }
}

/// A table's shape in the memory model's terms (kept).
pub(crate) fn dims(shape: &TableShape, options: &ProofOptions) -> TableDims {
    TableDims {
        log_n: shape.log_n,
        log_blowup: options.log_blowup,
        fixed_width: shape.fixed_width as u64,
        main_width: shape.main_width as u64,
        aux_width: shape.aux_width as u64,
        parts: shape.parts as u64,
        spill_piece: None,
        recompute: false,
        recompute_split: 0,
        recompute_keeps_traces: false,
        recompute_keeps_aux: false,
    }
}

/// The device set of a proof of these tables, each kept or spilled.
pub(crate) fn device_set(shapes: &[TableShape], options: &ProofOptions, residency: Residency) -> DeviceSet {
    let piece = |t| match residency {
        Residency::Spill { chunk_bytes, tables } if tables.contains(t) => Some(chunk_bytes),
        _ => None,
    };
    let tables = shapes.iter().enumerate().map(|(t, s)| TableDims {
        spill_piece: piece(t),
        recompute: residency.recomputes(t),
        recompute_split: residency.table_split(t, s.log_n, s.offsets.iter().copied().max().unwrap_or(0)),
        recompute_keeps_traces: residency.keeps_traces(t),
        recompute_keeps_aux: residency.keeps_aux(t),
        ..dims(s, options)
    });
    DeviceSet { tables: tables.collect() }
}

/// Table indices, heaviest device set first (ties in table order).
pub(crate) fn heaviest_first(shapes: &[TableShape], options: &ProofOptions) -> Vec<usize> {
    let mut order: Vec<usize> = (0..shapes.len()).collect();
    order.sort_by_key(|&t| std::cmp::Reverse(table_device_set(&dims(&shapes[t], options))));
    order
}

#[cfg(test)]
mod tests {
    use super::*;
    use backend_api::F;

    fn shape(name: &str, log_n: u32, log_lde: u32, main_width: usize) -> TableShape {
        TableShape {
            name: name.into(),
            log_n,
            log_lde,
            shift: F::ONE,
            fixed_width: 0,
            main_width,
            aux_width: 1,
            num_aux_values: 1,
            parts: 2,
            offsets: vec![0, 1],
        }
    }

    #[test]
    fn tables_start_heaviest_first_and_lanes_are_distinct() {
        let o = ProofOptions::default();
        let shapes = vec![shape("small", 10, 11, 4), shape("big", 16, 17, 40), shape("mid", 16, 17, 8)];
        assert_eq!(heaviest_first(&shapes, &o), vec![1, 2, 0]);
        let lanes = Lanes::new(&shapes);
        let mut all = lanes.all();
        assert_eq!(all.len(), 3 + 2 + 1, "a lane per table, per DEEP height and FRI");
        all.sort();
        all.dedup();
        assert_eq!(all.len(), 6);
        assert_eq!(lanes.deep.iter().map(|(h, _)| *h).collect::<Vec<_>>(), vec![17, 11]);
        assert_ne!(lanes.deep(17), Lane::NONE);
        assert_eq!(lanes.deep(5), Lane::NONE);
        let set = device_set(&shapes, &o, Residency::Keep);
        assert_eq!(set.tables[1].main_width, 40);
        assert!(set.bytes() > set.resident());
        // Spilled, the LDEs leave the device: the set shrinks.
        let spilled = device_set(&shapes, &o, Residency::spill_all(1 << 20));
        assert!(spilled.tables.iter().all(|d| d.spill_piece == Some(1 << 20)));
        assert!(spilled.resident() < set.resident() && spilled.bytes() < set.bytes());
    }
}
