//! A structure-aware proof fuzzer: mutations a byte flip rarely reaches.
//!
//! [`mutate`] changes a decoded [`Proof`] where its structure is: option
//! fields, table heights, numbers at their extremes, the length of every
//! vector and nested vector (pop, push, clear, duplicate, swap), an
//! optional commitment present or absent, field values and digests. The
//! mutant re-encodes to a well-formed file, so the verifier, not the
//! decoder, has to refuse it: with a typed error, never a panic.

use crate::proof::{Proof, QueryProof, TableOod, TableQuery};
use backend_api::{Digest, Ext, HashKind, RowOpening, F};

/// splitmix64: a failing case is reproduced from its seed.
#[derive(Clone, Debug)]
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform below `n` (n > 0); the bias is irrelevant here.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    fn felt(&mut self) -> F {
        F::new(self.next_u64())
    }

    fn ext(&mut self) -> Ext {
        Ext::new(self.felt(), self.felt(), self.felt())
    }

    fn digest(&mut self) -> Digest {
        std::array::from_fn(|_| self.next_u64() as u8)
    }
}

/// A number a careless verifier would mishandle: extremes, neighbours of
/// the old value, powers of two, anything.
fn number(rng: &mut Rng, old: u64, max: u64) -> u64 {
    let v = match rng.below(8) {
        0 => 0,
        1 => old.wrapping_add(1),
        2 => old.wrapping_sub(1),
        3 => max,
        4 => max - 1,
        5 => 1u64 << rng.below(64),
        6 => old.wrapping_mul(2),
        _ => rng.next_u64(),
    };
    v.min(max)
}

fn u32_field(rng: &mut Rng, v: &mut u32) {
    *v = number(rng, *v as u64, u32::MAX as u64) as u32;
}

fn usize_field(rng: &mut Rng, v: &mut usize) {
    *v = number(rng, *v as u64, usize::MAX as u64) as usize;
}

/// Changes a vector's length or order; `fresh` makes a new element.
fn reshape<T: Clone>(rng: &mut Rng, v: &mut Vec<T>, fresh: impl FnOnce(&mut Rng) -> T) -> &'static str {
    match rng.below(6) {
        0 => {
            v.pop();
            "pop"
        }
        1 => {
            v.push(fresh(rng));
            "push"
        }
        2 => {
            v.clear();
            "clear"
        }
        3 if !v.is_empty() => {
            let i = rng.below(v.len());
            v.insert(i, v[i].clone());
            "duplicate"
        }
        4 if v.len() >= 2 => {
            let (i, j) = (rng.below(v.len()), rng.below(v.len()));
            v.swap(i, j);
            "swap"
        }
        _ if !v.is_empty() => {
            let i = rng.below(v.len());
            v.remove(i);
            "remove"
        }
        _ => {
            v.push(fresh(rng));
            "push"
        }
    }
}

/// Either reshapes `v` or replaces one of its elements.
fn tweak<T: Clone>(rng: &mut Rng, v: &mut Vec<T>, mut fresh: impl FnMut(&mut Rng) -> T) -> &'static str {
    if v.is_empty() || rng.below(2) == 0 {
        return reshape(rng, v, fresh);
    }
    let i = rng.below(v.len());
    v[i] = fresh(rng);
    "replace"
}

/// A random element of `v`, if any.
fn pick<'a, T>(rng: &mut Rng, v: &'a mut [T]) -> Option<&'a mut T> {
    if v.is_empty() {
        return None;
    }
    let i = rng.below(v.len());
    v.get_mut(i)
}

fn opening(rng: &mut Rng, o: &mut RowOpening) -> String {
    if rng.below(2) == 0 {
        format!("values {}", tweak(rng, &mut o.values, Rng::felt))
    } else {
        format!("path {}", tweak(rng, &mut o.path, Rng::digest))
    }
}

fn table_ood(rng: &mut Rng, od: &mut TableOod) -> String {
    match rng.below(3) {
        0 => match (rng.below(2), pick(rng, &mut od.main)) {
            (0, Some(point)) => format!("main point {}", tweak(rng, point, Rng::ext)),
            _ => format!("main points {}", reshape(rng, &mut od.main, |_| vec![])),
        },
        1 => match (rng.below(2), pick(rng, &mut od.aux)) {
            (0, Some(point)) => format!("aux point {}", tweak(rng, point, Rng::ext)),
            _ => format!("aux points {}", reshape(rng, &mut od.aux, |_| vec![])),
        },
        _ => format!("quotient {}", tweak(rng, &mut od.quotient, Rng::ext)),
    }
}

fn table_query(rng: &mut Rng, tq: &mut TableQuery) -> String {
    match rng.below(4) {
        0 => format!("main {}", opening(rng, &mut tq.main)),
        1 => format!("quotient {}", opening(rng, &mut tq.quotient)),
        2 => match &mut tq.aux {
            Some(o) => format!("aux {}", opening(rng, o)),
            None => {
                tq.aux = Some(tq.main.clone());
                "aux added".into()
            }
        },
        _ => {
            let had = tq.aux.take().is_some();
            if had { "aux removed" } else { "aux still absent" }.into()
        }
    }
}

fn query(rng: &mut Rng, q: &mut QueryProof) -> String {
    match rng.below(4) {
        0 => format!("tables {}", reshape(rng, &mut q.tables, |_| TableQuery::empty())),
        1 => format!("fri layers {}", reshape(rng, &mut q.fri, |_| RowOpening { values: vec![], path: vec![] })),
        2 => match pick(rng, &mut q.tables) {
            Some(tq) => format!("table {}", table_query(rng, tq)),
            None => "no table".into(),
        },
        _ => match pick(rng, &mut q.fri) {
            Some(o) => format!("fri {}", opening(rng, o)),
            None => "no fri layer".into(),
        },
    }
}

impl TableQuery {
    fn empty() -> TableQuery {
        let o = RowOpening { values: vec![], path: vec![] };
        TableQuery { main: o.clone(), aux: None, quotient: o }
    }
}

/// Applies one structural mutation and says what it did.
pub fn mutate_once(rng: &mut Rng, p: &mut Proof) -> String {
    let o = &mut p.options;
    match rng.below(17) {
        0 => {
            u32_field(rng, &mut o.log_blowup);
            format!("log_blowup = {}", o.log_blowup)
        }
        1 => {
            usize_field(rng, &mut o.num_queries);
            format!("num_queries = {}", o.num_queries)
        }
        2 => {
            u32_field(rng, &mut o.grinding_bits);
            format!("grinding_bits = {}", o.grinding_bits)
        }
        3 => {
            o.hash = if o.hash == HashKind::Blake3 { HashKind::Keccak256 } else { HashKind::Blake3 };
            format!("hash = {}", o.hash)
        }
        4 => {
            u32_field(rng, &mut o.log_fri_arity);
            format!("log_fri_arity = {}", o.log_fri_arity)
        }
        5 => {
            u32_field(rng, &mut o.log_final_poly_len);
            format!("log_final_poly_len = {}", o.log_final_poly_len)
        }
        6 => match pick(rng, &mut p.log_heights) {
            Some(h) => {
                u32_field(rng, h);
                format!("a log height = {h}")
            }
            None => "no heights".into(),
        },
        7 => format!("log_heights {}", reshape(rng, &mut p.log_heights, |r| r.below(40) as u32)),
        8 => format!("main roots {}", tweak(rng, &mut p.main_roots, Rng::digest)),
        9 => format!("aux roots {}", tweak(rng, &mut p.aux_roots, |r| (r.below(2) == 0).then(|| r.digest()))),
        10 => match (rng.below(2), pick(rng, &mut p.aux_values)) {
            (0, Some(values)) => format!("a table's aux values {}", tweak(rng, values, Rng::ext)),
            _ => format!("aux value lists {}", reshape(rng, &mut p.aux_values, |_| vec![])),
        },
        11 => format!("quotient roots {}", tweak(rng, &mut p.quotient_roots, Rng::digest)),
        12 => match (rng.below(3), pick(rng, &mut p.ood)) {
            (0, _) | (_, None) => {
                let empty = |_: &mut Rng| TableOod { main: vec![], aux: vec![], quotient: vec![] };
                format!("ood tables {}", reshape(rng, &mut p.ood, empty))
            }
            (_, Some(od)) => format!("ood {}", table_ood(rng, od)),
        },
        13 => format!("fri roots {}", tweak(rng, &mut p.fri_roots, Rng::digest)),
        14 => format!("final poly {}", tweak(rng, &mut p.final_poly, Rng::ext)),
        15 => {
            p.pow_nonce = number(rng, p.pow_nonce, u64::MAX);
            format!("pow_nonce = {}", p.pow_nonce)
        }
        _ => match (rng.below(3), pick(rng, &mut p.queries)) {
            (0, _) | (_, None) => {
                let empty = |_: &mut Rng| QueryProof { tables: vec![], fri: vec![] };
                format!("queries {}", reshape(rng, &mut p.queries, empty))
            }
            (_, Some(q)) => format!("query {}", query(rng, q)),
        },
    }
}

/// One to three stacked mutations; returns what they did.
pub fn mutate(rng: &mut Rng, proof: &mut Proof) -> Vec<String> {
    let count = 1 + rng.below(3);
    (0..count).map(|_| mutate_once(rng, proof)).collect()
}
