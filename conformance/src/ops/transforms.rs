//! Host transfers, pins, reshapes and the NTT pair, against the reference.

use super::{same_host, Checker, CTX};
use crate::inputs::{rand_f, rand_matrix, rows_label};
use backend_api::{Backend, BackendBase, ColMatrix, NttOps};
use backend_cpu::CpuMatrix;

impl<B: Backend> Checker<'_, B> {
    pub fn transfers(&mut self) {
        for (log, w) in self.cfg.shapes() {
            let rows = 1usize << log;
            self.case("upload+download", rows_label(rows), w.to_string(), |c, r| {
                let m = rand_matrix(r, w, rows);
                let (g, _) = c.up(&m)?;
                let back = c.b.download(&CTX, &g).map_err(|e| format!("download: {e}"))?;
                same_host(&back, &m)
            });
            // Pinned or not (a host backend pins nothing), a matrix and its
            // clones upload the same bytes, through the LDE's fused upload
            // too, and so does a clone written after the pin and the matrix
            // once the pin is dropped.
            self.case("pin, upload+download", rows_label(rows), w.to_string(), |c, r| {
                let m = rand_matrix(r, w, rows);
                let pin = c.b.pin(&CTX, &m).map_err(|e| format!("pin: {e}"))?;
                if ![0, 8 * (w * rows) as u64].contains(&pin.bytes()) {
                    return Err(format!("a pin of {} bytes for a buffer of {}", pin.bytes(), 8 * w * rows));
                }
                let roundtrip = |h: &ColMatrix| -> Result<(), String> {
                    let g = c.b.upload(&CTX, h).map_err(|e| format!("upload: {e}"))?;
                    same_host(&c.b.download(&CTX, &g).map_err(|e| format!("download: {e}"))?, h)
                };
                roundtrip(&m)?;
                roundtrip(&m.clone())?;
                let (shift, lb) = (rand_f(r), u32::from((w * rows) << 1 <= c.lde_cap()));
                let (g, lde) = c.b.upload_coset_lde(&CTX, &m.clone(), lb, shift).map_err(|e| e.to_string())?;
                same_host(&c.b.download(&CTX, &g).map_err(|e| e.to_string())?, &m)?;
                let cm = CpuMatrix::from_host(&m);
                c.same_matrix(Ok(lde), c.cpu.coset_lde(&CTX, &cm, lb, shift))?;
                let mut written = m.clone();
                written.data_mut()[0] = rand_f(r);
                roundtrip(&written)?;
                drop(pin);
                roundtrip(&m)
            });
            if rows >= 2 {
                let mut heights = vec![rows / 2, rows / rows.min(16)];
                heights.dedup();
                for h in heights {
                    self.case(format!("reshape /{}", rows / h), rows_label(rows), w.to_string(), |c, r| {
                        let m = rand_matrix(r, w, rows);
                        let (g, cm) = c.up(&m)?;
                        c.same_matrix(c.b.reshape(&CTX, &g, h), c.cpu.reshape(&CTX, &cm, h)).map(drop)
                    });
                }
            }
        }
    }

    pub fn ntt(&mut self) {
        for (log, w) in self.cfg.shapes() {
            let rows = 1usize << log;
            self.case("ntt", rows_label(rows), w.to_string(), |c, r| {
                let (g, cm) = c.up(&rand_matrix(r, w, rows))?;
                c.same_matrix(c.b.ntt(&CTX, &g), c.cpu.ntt(&CTX, &cm)).map(drop)
            });
            self.case("intt", rows_label(rows), w.to_string(), |c, r| {
                let (g, cm) = c.up(&rand_matrix(r, w, rows))?;
                c.same_matrix(c.b.intt(&CTX, &g), c.cpu.intt(&CTX, &cm)).map(drop)
            });
            // Its input given up: the result is intt's, whatever the input
            // holds afterwards.
            self.case("intt_in_place", rows_label(rows), w.to_string(), |c, r| {
                let (g, cm) = c.up(&rand_matrix(r, w, rows))?;
                c.same_matrix(c.b.intt_in_place(&CTX, &g), c.cpu.intt(&CTX, &cm)).map(drop)
            });
            self.case("intt(ntt(x)) = x", rows_label(rows), w.to_string(), |c, r| {
                let m = rand_matrix(r, w, rows);
                let (g, _) = c.up(&m)?;
                let f = c.b.ntt(&CTX, &g).map_err(|e| e.to_string())?;
                let back = c.b.intt(&CTX, &f).map_err(|e| e.to_string())?;
                same_host(&c.b.download(&CTX, &back).map_err(|e| e.to_string())?, &m)
            });
        }
    }
}
