//! `FriOps`: FRI folding with roll-ins, and proof-of-work grinding.

use crate::{ext_u64, CudaBackend, CudaMatrix};
use backend_api::{validate, BackendError, Coset, Ctx, Digest, Ext, FriOps, HashKind, Result, Stage, F};

impl FriOps for CudaBackend {
    fn fri_fold(
        &self,
        ctx: &Ctx,
        layer: &CudaMatrix,
        domain: Coset,
        log_arity: u32,
        beta: Ext,
        roll_in: Option<(&CudaMatrix, Ext)>,
    ) -> Result<CudaMatrix> {
        let stage = Stage::FriFold;
        validate::fri_fold(layer, domain, log_arity, roll_in.map(|r| r.0))?;
        // The layer folded by 2^log_arity; the output's and a roll-in's columns.
        let width = 3 + 3 * usize::from(roll_in.is_some());
        let _permit = self.admit(stage, ctx, Self::dims(domain.log_size - log_arity, log_arity, width))?;
        let mut sc = self.scope(stage, ctx)?;
        let dev = self.dev.clone();
        let m = domain.size() >> log_arity;
        let tw = self.twiddles(&mut sc, domain.log_size)?;
        let out = sc.alloc(m * 3)?;
        let shift_inv = domain.shift.inverse().ok_or_else(|| BackendError::invalid(stage, "coset shift is zero"))?;
        let a_inv = F::new(1u64 << log_arity).inverse().expect("non-zero");
        let b = ext_u64(beta);
        let (rp, s) = match roll_in {
            Some((g, s)) => (g.buf.ptr, ext_u64(s)),
            None => (0, [0; 3]),
        };
        let mut bufs = vec![&layer.buf, &out, &tw.inv];
        bufs.extend(roll_in.map(|(g, _)| &g.buf));
        let threads = 128;
        sc.launch(
            dev.func("fri_fold"),
            Self::grid(m as u64, threads),
            threads,
            0,
            &[
                layer.buf.ptr,
                out.ptr,
                domain.log_size as u64,
                log_arity as u64,
                b[0],
                b[1],
                b[2],
                shift_inv.value(),
                tw.inv.ptr,
                tw.log as u64,
                a_inv.value(),
                rp,
                s[0],
                s[1],
                s[2],
            ],
            &bufs,
        )?;
        Ok(Self::matrix(out, m, 3))
    }

    fn grind(&self, ctx: &Ctx, hash: HashKind, seed: &Digest, bits: u32) -> Result<u64> {
        let stage = Stage::Grind;
        validate::grind(bits)?;
        if bits == 0 {
            return Ok(0);
        }
        let _permit = self.admit(stage, ctx, Self::dims(0, 0, 0))?;
        let mut sc = self.scope(stage, ctx)?;
        let dev = self.dev.clone();
        let s: Vec<u64> = seed.chunks(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))).collect();
        let best = sc.upload(&[u64::MAX])?;
        let kernel = match hash {
            HashKind::Blake3 => "grind_blake3",
            HashKind::Keccak256 => "grind_keccak",
        };
        // The first batch is four times the expected tries (a hit with
        // probability 1 - e^-4) and at least a device's worth of threads;
        // each miss quadruples it. A batch sized for the hardest searches
        // would make a 16-bit search hash 2^26 nonces where 2^16 suffice.
        let max_batch: u64 = 1 << 26;
        let mut batch: u64 = (1u64 << (bits + 2).min(26)).max(1 << 18);
        let threads = 256;
        let mut start = 0u64;
        loop {
            let args = [s[0], s[1], s[2], s[3], start, batch, bits as u64, best.ptr];
            sc.launch(dev.func(kernel), Self::grid(batch, threads), threads, 0, &args, &[&best])?;
            let b = Self::download_u64(&mut sc, &best, 0, 1)?;
            if b[0] != u64::MAX {
                return Ok(b[0]);
            }
            start = start.checked_add(batch).ok_or_else(|| dev.err(stage, ctx, "nonce space exhausted"))?;
            batch = (batch * 4).min(max_batch);
        }
    }
}
