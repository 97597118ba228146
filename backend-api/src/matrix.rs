//! Host matrices: column-major, base-field elements.
//!
//! Extension columns are stored flattened, three base columns each
//! (coordinate c of extension column k is base column 3k + c), so every
//! backend moves, transforms and commits one kind of buffer.

use crate::ext::Ext;
use crate::field::F;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// A column-major matrix of base-field elements on the host. Clones share
/// the buffer (copy on write), so a backend can keep a trace it was handed
/// without copying it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ColMatrix {
    width: usize,
    height: usize,
    data: Arc<Vec<F>>,
}

impl ColMatrix {
    /// `data` holds `width` columns of `height` elements, one after another.
    pub fn new(width: usize, height: usize, data: Vec<F>) -> ColMatrix {
        assert_eq!(data.len(), width * height, "matrix data does not match its shape");
        ColMatrix { width, height, data: Arc::new(data) }
    }

    /// A matrix over an existing shared buffer (no copy).
    pub fn from_shared(width: usize, height: usize, data: Arc<Vec<F>>) -> ColMatrix {
        assert_eq!(data.len(), width * height, "matrix data does not match its shape");
        ColMatrix { width, height, data }
    }

    /// Rows first, first + 2^log_stride, ..., wrapping past the last row
    /// (the height a power of two): see `BackendBase::stride_rows`.
    pub fn stride_rows(&self, first: usize, log_stride: u32) -> ColMatrix {
        let (h, mask) = (self.height >> log_stride, self.height.wrapping_sub(1));
        let data = gather_columns(self.width, h, |c, r0, out| {
            let src = self.column(c);
            for (r, v) in (r0..).zip(out) {
                *v = src[(first + (r << log_stride)) & mask];
            }
        });
        ColMatrix::new(self.width, h, data)
    }

    /// Row j + P*k is row k of `pieces[j]` (P pieces of one shape): see
    /// `BackendBase::interleave`.
    pub fn interleave(pieces: &[ColMatrix]) -> ColMatrix {
        let count = pieces.len();
        let (h, w) = pieces.first().map_or((0, 0), |p| (p.height, p.width));
        let rows = h * count;
        let data = gather_columns(w, rows, |c, r0, out| {
            let cols: Vec<&[F]> = pieces.iter().map(|p| p.column(c)).collect();
            // Output row r is row r / count of piece r % count.
            let (mut k, mut j) = (r0 / count, r0 % count);
            for v in out {
                *v = cols[j][k];
                j += 1;
                if j == count {
                    (j, k) = (0, k + 1);
                }
            }
        });
        ColMatrix::new(w, rows, data)
    }

    pub fn zeros(width: usize, height: usize) -> ColMatrix {
        ColMatrix { width, height, data: Arc::new(vec![F::ZERO; width * height]) }
    }

    pub fn from_columns(columns: Vec<Vec<F>>) -> ColMatrix {
        let height = columns.first().map_or(0, Vec::len);
        assert!(columns.iter().all(|c| c.len() == height), "columns differ in height");
        let width = columns.len();
        let data = columns.into_iter().flatten().collect();
        ColMatrix { width, height, data: Arc::new(data) }
    }

    /// Flattens extension columns: base column 3k + c is coordinate c of
    /// extension column k.
    pub fn from_ext_columns(columns: &[Vec<Ext>]) -> ColMatrix {
        let height = columns.first().map_or(0, Vec::len);
        let mut data = Vec::with_capacity(columns.len() * 3 * height);
        for col in columns {
            assert_eq!(col.len(), height, "columns differ in height");
            for c in 0..3 {
                data.extend(col.iter().map(|e| e.0[c]));
            }
        }
        ColMatrix { width: columns.len() * 3, height, data: Arc::new(data) }
    }

    pub fn width(&self) -> usize {
        self.width
    }

    pub fn height(&self) -> usize {
        self.height
    }

    pub fn data(&self) -> &[F] {
        &self.data
    }

    /// The shared buffer, for backends that keep the data without copying.
    pub fn shared_data(&self) -> &Arc<Vec<F>> {
        &self.data
    }

    pub fn data_mut(&mut self) -> &mut [F] {
        Arc::make_mut(&mut self.data).as_mut_slice()
    }

    pub fn into_data(self) -> Vec<F> {
        Arc::try_unwrap(self.data).unwrap_or_else(|shared| (*shared).clone())
    }

    pub fn column(&self, j: usize) -> &[F] {
        &self.data[j * self.height..(j + 1) * self.height]
    }

    pub fn column_mut(&mut self, j: usize) -> &mut [F] {
        let h = self.height;
        &mut Arc::make_mut(&mut self.data)[j * h..(j + 1) * h]
    }

    pub fn columns(&self) -> impl Iterator<Item = &[F]> {
        (0..self.width).map(move |j| self.column(j))
    }

    #[inline]
    pub fn get(&self, row: usize, col: usize) -> F {
        self.data[col * self.height + row]
    }

    #[inline]
    pub fn set(&mut self, row: usize, col: usize, v: F) {
        let h = self.height;
        Arc::make_mut(&mut self.data)[col * h + row] = v;
    }

    pub fn row(&self, row: usize) -> Vec<F> {
        (0..self.width).map(|c| self.get(row, c)).collect()
    }

    /// Extension element `k` of a flattened matrix at `row`.
    pub fn get_ext(&self, row: usize, k: usize) -> Ext {
        Ext([self.get(row, 3 * k), self.get(row, 3 * k + 1), self.get(row, 3 * k + 2)])
    }

    /// The extension column `k` of a flattened matrix.
    pub fn ext_column(&self, k: usize) -> Vec<Ext> {
        (0..self.height).map(|r| self.get_ext(r, k)).collect()
    }
}

/// A `width` x `height` column-major buffer, filled by
/// `host::fill_columns` on a zeroed allocation (its pages first touched
/// by the filling threads).
fn gather_columns(width: usize, height: usize, fill: impl Fn(usize, usize, &mut [F]) + Sync) -> Vec<F> {
    let len = width * height;
    // Where the zeroed allocation fails, `vec!` fails too (an abort, as
    // for any infallible host matrix).
    let mut data = crate::host::try_zeroed(len).unwrap_or_else(|_| vec![F::ZERO; len]);
    crate::host::fill_columns(&mut data, height, fill);
    data
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbered(width: usize, height: usize, seed: u64) -> ColMatrix {
        let data = (0..(width * height) as u64).map(|i| F::new(i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ seed)).collect();
        ColMatrix::new(width, height, data)
    }

    #[test]
    fn stride_rows_takes_every_stride_th_row_and_wraps() {
        // 2^16 rows: the 2^15-row fill blocks split each output column.
        let m = numbered(3, 1 << 16, 5);
        for (first, log_stride) in [(0, 0), (1, 0), (3, 1), (7, 2), ((1 << 16) + 2, 1)] {
            let s = m.stride_rows(first, log_stride);
            assert_eq!((s.width(), s.height()), (3, (1 << 16) >> log_stride));
            for c in 0..3 {
                for k in [0, 1, 12_345, s.height() - 1] {
                    let want = m.get((first + (k << log_stride)) % m.height(), c);
                    assert_eq!(s.get(k, c), want, "first {first} stride 2^{log_stride} row {k} col {c}");
                }
            }
        }
    }

    #[test]
    fn interleave_puts_row_k_of_piece_j_at_j_plus_count_k() {
        // Three pieces of 2^14 rows: 49152 output rows, so a fill block
        // starts in the middle of a group of three.
        let pieces: Vec<ColMatrix> = (0..3).map(|j| numbered(2, 1 << 14, j)).collect();
        let all = ColMatrix::interleave(&pieces);
        assert_eq!((all.width(), all.height()), (2, 3 << 14));
        for c in 0..2 {
            for r in 0..all.height() {
                assert_eq!(all.get(r, c), pieces[r % 3].get(r / 3, c), "row {r} col {c}");
            }
        }
        // Taking every third row back gives each piece.
        let four: Vec<ColMatrix> = (0..4).map(|j| numbered(2, 1 << 13, 10 + j)).collect();
        let all = ColMatrix::interleave(&four);
        for (j, p) in four.iter().enumerate() {
            assert_eq!(&all.stride_rows(j, 2), p);
        }
        assert_eq!(ColMatrix::interleave(&[]).height(), 0);
    }
}
