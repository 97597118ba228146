//! FRI folding and proof-of-work grinding.

use crate::device::groups_for;
use crate::{ext_u64, invalid, shader, words, WgpuBackend, WgpuMatrix};
use backend_api::{validate, Coset, Ctx, Digest, Ext, HashKind, Result, Stage, F};

const FOLD: &str = include_str!("shaders/fold.wgsl");
const GRIND: &str = include_str!("shaders/grind.wgsl");

/// An extension element as six push-constant words.
pub(crate) fn ext_words(e: Ext) -> Vec<u32> {
    ext_u64(e).into_iter().flat_map(words).collect()
}

impl WgpuBackend {
    pub(crate) fn fold(
        &self,
        ctx: &Ctx,
        layer: &WgpuMatrix,
        domain: Coset,
        log_arity: u32,
        beta: Ext,
        roll_in: Option<(&WgpuMatrix, Ext)>,
    ) -> Result<WgpuMatrix> {
        let stage = Stage::FriFold;
        validate::fri_fold(layer, domain, log_arity, roll_in.map(|r| r.0))?;
        let _permit = self.admit(stage, ctx, Self::dims(domain.log_size, 0, 0))?;
        let m = domain.size() >> log_arity;
        let tw = self.twiddles(stage, ctx, domain.log_size)?;
        let src = layer.single(&self.dev, stage, ctx)?;
        let roll = match roll_in {
            Some((g, _)) => g.single(&self.dev, stage, ctx)?,
            None => &self.dev.dummy,
        };
        let out = self.alloc_matrix(stage, ctx, m, 3)?;
        let shift_inv = domain.shift.inverse().ok_or_else(|| invalid(stage, "coset shift is zero"))?;
        let a_inv = F::new(1u64 << log_arity).inverse().ok_or_else(|| invalid(stage, "arity is zero"))?;
        let mut pc = vec![domain.log_size, log_arity, tw.log, roll_in.is_some() as u32];
        pc.extend(ext_words(beta));
        pc.extend(ext_words(roll_in.map_or(Ext::ZERO, |r| r.1)));
        pc.extend(words(shift_inv.value()));
        pc.extend(words(a_inv.value()));
        let k = self.dev.kernel(
            stage,
            ctx,
            "fold",
            &shader::kernel(self.dev.int64, FOLD, 1),
            &[false, false, false, true],
        )?;
        let mut job = self.dev.job(stage, ctx);
        job.dispatch(&k, &[src, roll, &tw.inv, &out.bufs[0]], &pc, groups_for(m as u64))?;
        job.submit()?;
        Ok(out)
    }

    pub(crate) fn pow(&self, ctx: &Ctx, hash: HashKind, seed: &Digest, bits: u32) -> Result<u64> {
        let stage = Stage::Grind;
        validate::grind(bits)?;
        if bits == 0 {
            return Ok(0);
        }
        let _permit = self.admit(stage, ctx, Self::dims(0, 0, 0))?;
        let body = format!("{}\n{}\n{GRIND}", shader::BLAKE3, shader::KECCAK);
        let k = self.dev.kernel(stage, ctx, "grind", &shader::kernel(self.dev.int64, &body, 1), &[true])?;
        let best = self.dev.alloc(stage, ctx, 8)?;
        let seed_words: Vec<u32> = seed.chunks(4).map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes"))).collect();
        let code = match hash {
            HashKind::Blake3 => 0,
            HashKind::Keccak256 => 1,
        };
        // Small batches first (easy difficulties end at once), then larger
        // ones so a hard search pays few round trips.
        let mut batch: u64 = 1 << 14;
        let mut start = 0u64;
        loop {
            // No hit leaves the word at all ones.
            self.dev.write(stage, ctx, &best, 0, &[u32::MAX as u64])?;
            let mut job = self.dev.job(stage, ctx);
            let mut pc = seed_words.clone();
            pc.extend(words(start));
            pc.extend([batch as u32, bits, code]);
            job.dispatch(&k, &[&best], &pc, groups_for(batch))?;
            job.submit()?;
            let b = self.dev.read(stage, ctx, &[(&best, 0, 1)])?[0] as u32;
            if b != u32::MAX {
                return Ok(start + b as u64);
            }
            start = start.checked_add(batch).ok_or_else(|| self.dev.err(stage, ctx, "nonce space exhausted"))?;
            batch = (batch * 4).min(1 << 24);
        }
    }
}
