//! What prover and verifier derive identically: table shapes and coset
//! shifts, the statement's transcript prefix, the out-of-domain point, the
//! DEEP coefficients and the FRI folding schedule.

use crate::air::Air;
use crate::options::ProofOptions;
use crate::proof::TableOod;
use crate::transcript::Transcript;
use backend_api::hash::hash_leaf;
use backend_api::{ConstraintDomain, ConstraintSystem, Ext, Leaf, F, GENERATOR};

pub const PROTOCOL: &[u8] = b"kiln-stark-v2";
/// Tables taller than this are refused (the LDE must fit the field's
/// 2^32 roots of unity with blowup 16).
pub const MAX_LOG_HEIGHT: u32 = 28;

/// The shape of one table as both sides see it.
#[derive(Clone, Debug)]
pub struct TableShape {
    pub name: String,
    pub log_n: u32,
    pub log_lde: u32,
    /// Coset shift of the table's LDE: GENERATOR^(N_max / N), so that FRI,
    /// folding the largest codeword, reaches this table's domain exactly.
    pub shift: F,
    pub fixed_width: usize,
    pub main_width: usize,
    /// Extension columns (3 base columns each).
    pub aux_width: usize,
    pub num_aux_values: usize,
    pub parts: usize,
    pub offsets: Vec<usize>,
}

impl TableShape {
    pub fn n(&self) -> usize {
        1 << self.log_n
    }
    pub fn trace_generator(&self) -> F {
        F::two_adic_root(self.log_n)
    }
    /// The out-of-domain points z * w^offset.
    pub fn ood_points(&self, z: Ext) -> Vec<Ext> {
        let w = self.trace_generator();
        self.offsets.iter().map(|&o| z * w.pow(o as u64)).collect()
    }
    /// Log of the quotient domain's size: the fewest points, a power of
    /// two times n, that determine a quotient of degree below parts * n.
    /// It is every 2^(log_lde - log_quotient)-th point of the LDE coset.
    pub fn log_quotient(&self) -> u32 {
        self.log_n + self.parts.next_power_of_two().trailing_zeros()
    }
}

/// Checks each table against the options and returns the shapes.
pub fn table_shapes(
    tables: &[&dyn Air],
    log_heights: &[u32],
    options: &ProofOptions,
    num_publics: usize,
    num_challenges: usize,
) -> Result<Vec<TableShape>, String> {
    if tables.is_empty() {
        return Err("the machine has no tables".into());
    }
    if tables.len() != log_heights.len() {
        return Err(format!("{} tables, {} heights", tables.len(), log_heights.len()));
    }
    // Heights come from the proof: bound them before any arithmetic.
    if let Some((air, log_n)) = tables.iter().zip(log_heights).find(|(_, &h)| h > MAX_LOG_HEIGHT) {
        return Err(format!("table {}: height 2^{log_n} exceeds 2^{MAX_LOG_HEIGHT}", air.name()));
    }
    let log_max = *log_heights.iter().max().expect("non-empty") + options.log_blowup;
    let mut shapes = Vec::with_capacity(tables.len());
    for (air, &log_n) in tables.iter().zip(log_heights) {
        let cs = air.constraints();
        let l = cs.layout;
        let name = air.name().to_string();
        if let Some(fixed) = air.fixed_trace() {
            if fixed.width() != l.fixed_width || fixed.height() != 1 << log_n {
                return Err(format!(
                    "table {name}: fixed trace is {}x{}, expected {}x{}",
                    fixed.height(),
                    fixed.width(),
                    1u64 << log_n,
                    l.fixed_width
                ));
            }
        } else if l.fixed_width != 0 {
            return Err(format!("table {name}: layout declares fixed columns but the AIR has no fixed trace"));
        }
        if l.num_public != num_publics {
            return Err(format!("table {name}: expects {} public inputs, {num_publics} given", l.num_public));
        }
        if l.num_challenges != num_challenges {
            return Err(format!(
                "table {name}: expects {} challenges, the machine draws {num_challenges}",
                l.num_challenges
            ));
        }
        let parts = cs.quotient_parts();
        if parts > 1 << options.log_blowup {
            return Err(format!("table {name}: constraints need blowup >= {parts}, options give {}", options.blowup()));
        }
        let log_lde = log_n + options.log_blowup;
        shapes.push(TableShape {
            name,
            log_n,
            log_lde,
            shift: GENERATOR.pow(1u64 << (log_max - log_lde)),
            fixed_width: l.fixed_width,
            main_width: l.main_width,
            aux_width: l.aux_width,
            num_aux_values: l.num_aux_values,
            parts,
            offsets: cs.offsets(),
        });
    }
    Ok(shapes)
}

/// Absorbs everything the proof is about before any commitment.
pub fn absorb_statement(
    tr: &mut Transcript,
    tables: &[&dyn Air],
    options: &ProofOptions,
    log_heights: &[u32],
    publics: &[F],
) {
    tr.absorb(b"options", &postcard::to_allocvec(options).expect("options encode"));
    tr.absorb_u64(b"tables", tables.len() as u64);
    for (air, &log_n) in tables.iter().zip(log_heights) {
        tr.absorb(b"table", air.name().as_bytes());
        tr.absorb_u64(b"log-height", log_n as u64);
        tr.absorb(b"constraints", &postcard::to_allocvec(air.constraints()).expect("constraints encode"));
        if let Some(fixed) = air.fixed_trace() {
            tr.absorb_digest(b"fixed", &hash_leaf(options.hash, fixed.data()));
        }
    }
    tr.absorb_felts(b"publics", publics);
}

/// Where a proof's LogUp challenges come from.
#[derive(Clone, Copy, Debug)]
pub enum Challenges<'a> {
    /// Drawn from the proof's own transcript after its main roots; the
    /// machine's [`crate::Machine::check_aux_values`] checks the bus sums.
    Own,
    /// Drawn once for a set of proofs from all their main commitments
    /// ([`crate::segments`]) and absorbed into this proof's transcript.
    /// The bus sums are checked across the set, not per proof.
    Shared(&'a [Ext]),
}

/// The LogUp challenges, after the main roots: drawn, or the shared ones
/// absorbed so every later challenge depends on them.
pub fn logup_challenges(tr: &mut Transcript, count: usize, source: Challenges) -> Result<Vec<Ext>, String> {
    match source {
        Challenges::Own => Ok((0..count).map(|_| tr.challenge_ext(b"challenge")).collect()),
        Challenges::Shared(shared) if shared.len() == count => {
            tr.absorb_exts(b"shared-challenges", shared);
            Ok(shared.to_vec())
        }
        Challenges::Shared(shared) => Err(format!("{} shared challenges, the machine uses {count}", shared.len())),
    }
}

/// The out-of-domain point: redrawn until it lies outside the base field,
/// so it avoids every trace domain and LDE coset.
pub fn draw_ood_point(tr: &mut Transcript) -> Ext {
    loop {
        let z = tr.challenge_ext(b"ood-point");
        if !(z.0[1].is_zero() && z.0[2].is_zero()) {
            return z;
        }
    }
}

/// The DEEP coefficients of one table: powers of gamma in a fixed order
/// (tables in order; per point, main then aux columns; then the quotient).
/// A table's coefficients at its i-th offset are those at its first
/// offset times `offset_scale[i]` (gamma to the columns per point, i
/// times), so a prover may combine its columns once for every offset.
pub struct DeepCoeffs {
    pub main: Vec<Vec<Ext>>,
    pub aux: Vec<Vec<Ext>>,
    pub quotient: Vec<Ext>,
    pub offset_scale: Vec<Ext>,
}

pub fn deep_coeffs(shapes: &[TableShape], gamma: Ext) -> Vec<DeepCoeffs> {
    let mut acc = Ext::ONE;
    let mut next = || {
        let v = acc;
        acc *= gamma;
        v
    };
    shapes
        .iter()
        .map(|s| {
            let (mut main, mut aux, mut offset_scale) = (vec![], vec![], vec![]);
            let per_point = gamma.pow((s.main_width + 3 * s.aux_width) as u64);
            let mut scale = Ext::ONE;
            for _ in &s.offsets {
                main.push((0..s.main_width).map(|_| next()).collect());
                aux.push((0..3 * s.aux_width).map(|_| next()).collect());
                offset_scale.push(scale);
                scale *= per_point;
            }
            let quotient = (0..3 * s.parts).map(|_| next()).collect();
            DeepCoeffs { main, aux, quotient, offset_scale }
        })
        .collect()
}

/// One FRI fold: the layer of 2^log_size rows folds by 2^log_arity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FriStep {
    pub log_size: u32,
    pub log_arity: u32,
}

/// The FRI schedule: fold from the largest LDE down to the final layer,
/// landing exactly on every table's LDE size so its DEEP quotient can be
/// rolled in. Returns the steps and log2 of the final layer's size.
pub fn fri_schedule(shapes: &[TableShape], options: &ProofOptions) -> (Vec<FriStep>, u32) {
    let log_max = shapes.iter().map(|s| s.log_lde).max().expect("non-empty");
    let log_min = shapes.iter().map(|s| s.log_lde).min().expect("non-empty");
    let log_final = (options.log_final_poly_len + options.log_blowup).min(log_min);
    let mut steps = vec![];
    let mut s = log_max;
    while s > log_final {
        let target = shapes.iter().map(|t| t.log_lde).filter(|&l| l < s).max().unwrap_or(log_final).max(log_final);
        let log_arity = options.log_fri_arity.min(s - target);
        steps.push(FriStep { log_size: s, log_arity });
        s -= log_arity;
    }
    (steps, log_final)
}

/// Per FRI step, whether a smaller table's DEEP quotient joins the folded
/// layer there (its LDE height is the step's output height). Each roll-in
/// has its own challenge, drawn after the step's beta.
pub fn roll_ins(shapes: &[TableShape], steps: &[FriStep]) -> Vec<bool> {
    steps.iter().map(|st| shapes.iter().any(|s| s.log_lde == st.log_size - st.log_arity)).collect()
}

/// The coset shift of the FRI layer with 2^log_size rows.
pub fn layer_shift(log_max: u32, log_size: u32) -> F {
    GENERATOR.pow(1u64 << (log_max - log_size))
}

/// X, the extension's generator: recombines base-coordinate polynomials'
/// values into an extension column's value.
pub fn recombine(v: &[Ext]) -> Ext {
    let x = Ext::new(F::ZERO, F::ONE, F::ZERO);
    v[0] + v[1] * x + v[2] * x * x
}

/// The vanishing polynomial of a constraint domain at z, for a trace of
/// 2^log_n rows.
pub fn vanishing_at(domain: ConstraintDomain, z: Ext, log_n: u32) -> Ext {
    let n = 1u64 << log_n;
    let last = F::two_adic_root(log_n).pow(n - 1);
    let zn_minus_1 = z.pow(n) - F::ONE;
    match domain {
        ConstraintDomain::Transition => zn_minus_1 * (z - last).inverse().expect("z avoids the trace domain"),
        ConstraintDomain::FirstRow => z - F::ONE,
        ConstraintDomain::LastRow => z - last,
        ConstraintDomain::AllRows => zn_minus_1,
    }
}

/// sum_k alpha^k C_k(z) / Z_k(z), given every leaf's value at z.
pub fn composition_at(
    cs: &ConstraintSystem,
    z: Ext,
    log_n: u32,
    alpha: Ext,
    leaf: impl FnMut(&Leaf) -> Ext,
) -> Option<Ext> {
    let values = cs.eval(leaf);
    let mut acc = Ext::ZERO;
    let mut a = Ext::ONE;
    for (c, v) in cs.constraints.iter().zip(values) {
        acc += a * v * vanishing_at(c.domain, z, log_n).inverse()?;
        a *= alpha;
    }
    Some(acc)
}

/// Whether table `air`'s constraints at z, from its opened values `od`
/// (its fixed columns evaluated here), equal its quotient parts recombined
/// at z: the verifier's out-of-domain check. The prover runs it too: a
/// quotient composed on exactly parts * n points always interpolates, so a
/// trace that fails its constraints shows here, not in the split.
#[allow(clippy::too_many_arguments)] // the check's inputs, each from a different round
pub fn ood_consistent(
    air: &dyn Air,
    shape: &TableShape,
    z: Ext,
    alpha: Ext,
    od: &TableOod,
    challenges: &[Ext],
    publics: &[F],
    aux_values: &[Ext],
) -> bool {
    let points = shape.ood_points(z);
    let fixed: Vec<Vec<Ext>> = match air.fixed_trace() {
        Some(f) => points.iter().map(|&p| eval_on_subgroup(f, p)).collect(),
        None => vec![vec![]; points.len()],
    };
    let pidx = |offset: u32| shape.offsets.iter().position(|&o| o == offset as usize).expect("offset listed");
    let leaf = |l: &Leaf| -> Ext {
        match *l {
            Leaf::Const(c) => Ext::from_base(c),
            Leaf::Main { col, offset } => od.main[pidx(offset)][col as usize],
            Leaf::Fixed { col, offset } => fixed[pidx(offset)][col as usize],
            Leaf::Aux { col, offset } => {
                let c = 3 * col as usize;
                recombine(&od.aux[pidx(offset)][c..c + 3])
            }
            Leaf::Challenge(i) => challenges[i as usize],
            Leaf::Public(i) => Ext::from_base(publics[i as usize]),
            Leaf::AuxValue(i) => aux_values[i as usize],
        }
    };
    let Some(composed) = composition_at(air.constraints(), z, shape.log_n, alpha, leaf) else { return false };
    let zn = z.pow(shape.n() as u64);
    let mut recombined = Ext::ZERO;
    let mut zpow = Ext::ONE;
    for j in 0..shape.parts {
        recombined += zpow * recombine(&od.quotient[3 * j..3 * j + 3]);
        zpow *= zn;
    }
    composed == recombined
}

/// Evaluates the columns given on the subgroup of 2^log_n points at z
/// (barycentric): f(z) = (z^n - 1)/n * sum_i f_i w^i / (z - w^i). Each
/// 1 / (z - w^i) is written through z's characteristic polynomial c as
/// q_i(z) / c(w^i), q_i quadratic in z (`Ext::char_poly`), so the sum
/// takes base-field inverses of the c(w^i) and three base-field sums a
/// column, not extension inverses; chunks of points run in parallel, each
/// with its own batch inverse. The range table's 2^16 points made this
/// most of a small proof's verification. A point of the subgroup (c(w^i)
/// = 0) contributes nothing, as a zero inverse did before.
pub fn eval_on_subgroup(columns: &backend_api::ColMatrix, z: Ext) -> Vec<Ext> {
    use rayon::prelude::*;
    const CHUNK: usize = 1 << 12;
    let (n, width) = (columns.height(), columns.width());
    let w = F::two_adic_root(n.trailing_zeros());
    let c = z.char_poly();
    let cols: Vec<&[F]> = columns.columns().collect();
    // Per column, s_j = sum_i f_i a_i^(j+1) / c(a_i), a_i = w^i.
    let sums = (0..n.div_ceil(CHUNK))
        .into_par_iter()
        .map(|k| {
            let range = k * CHUNK..n.min((k + 1) * CHUNK);
            let first = w.pow(range.start as u64);
            let points: Vec<F> = backend_api::ext::powers(w, range.len()).into_iter().map(|p| p * first).collect();
            let at_points: Vec<F> = points.iter().map(|&a| ((a - c[0]) * a + c[1]) * a - c[2]).collect();
            let inv = backend_api::batch_inverse(&at_points);
            let chunk_sums = |col: &&[F]| {
                let mut s = [F::ZERO; 3];
                for ((&f, &a), &u) in col[range.clone()].iter().zip(&points).zip(&inv) {
                    let t = f * a * u;
                    let ta = t * a;
                    s = [s[0] + t, s[1] + ta, s[2] + ta * a];
                }
                s
            };
            cols.iter().map(chunk_sums).collect::<Vec<_>>()
        })
        .reduce(
            || vec![[F::ZERO; 3]; width],
            |a, b| a.iter().zip(&b).map(|(x, y)| [x[0] + y[0], x[1] + y[1], x[2] + y[2]]).collect(),
        );
    let scale = (z.pow(n as u64) - F::ONE) * F::new(n as u64).inverse().expect("n is non-zero");
    // sum_i f_i a_i / (z - a_i) = -(s2 + (z - e1) s1 + (z^2 - e1 z + e2) s0).
    let (k0, k1) = (z * z - z * c[0] + c[1], z - c[0]);
    sums.into_iter().map(|[s0, s1, s2]| -(k0 * s0 + k1 * s1 + s2) * scale).collect()
}

/// One FRI fold at one point: the a = values.len() siblings
/// f(x * omega^j) fold to (1/a) sum_j f(x omega^j) sum_r (beta / (x omega^j))^r.
pub fn fold_point(values: &[Ext], x: F, beta: Ext) -> Ext {
    let a = values.len();
    let omega = F::two_adic_root(a.trailing_zeros());
    let mut acc = Ext::ZERO;
    let mut xj = x;
    for &v in values {
        let t = beta * xj.inverse().expect("domain points are non-zero");
        let mut sum = Ext::ZERO;
        let mut p = Ext::ONE;
        for _ in 0..a {
            sum += p;
            p *= t;
        }
        acc += v * sum;
        xj *= omega;
    }
    acc.mul_base(F::new(a as u64).inverse().expect("a is non-zero"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// Columns given by random coefficients, evaluated on the subgroup by
    /// Horner; eval_on_subgroup must give each polynomial's value at z.
    #[test]
    fn eval_on_subgroup_is_each_polynomial_at_the_point() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(41);
        let mut f = || F::new(rng.gen::<u64>() % backend_api::field::P);
        for log_n in [0u32, 1, 3, 6, 11] {
            let n = 1usize << log_n;
            let coeffs: Vec<Vec<F>> = (0..3).map(|_| (0..n).map(|_| f()).collect()).collect();
            let horner = |c: &[F], x: Ext| c.iter().rev().fold(Ext::ZERO, |acc, &k| acc * x + k);
            let points = backend_api::ext::powers(F::two_adic_root(log_n), n);
            let columns = coeffs
                .iter()
                .map(|c| points.iter().map(|&a| horner(c, Ext::from_base(a)).coords()[0]).collect())
                .collect();
            let columns = backend_api::ColMatrix::from_columns(columns);
            let base_off_subgroup = Ext::from_base(GENERATOR);
            for z in [Ext::new(f(), f(), f()), Ext::new(f(), F::ZERO, f()), base_off_subgroup] {
                let want: Vec<Ext> = coeffs.iter().map(|c| horner(c, z)).collect();
                assert_eq!(eval_on_subgroup(&columns, z), want, "n = {n}, z = {z:?}");
            }
        }
    }

    #[test]
    fn deep_coefficients_at_each_offset_are_the_first_offsets_scaled() {
        let shape = |name: &str, main_width, aux_width, offsets: Vec<usize>| TableShape {
            name: name.into(),
            log_n: 4,
            log_lde: 6,
            shift: GENERATOR,
            fixed_width: 0,
            main_width,
            aux_width,
            num_aux_values: 0,
            parts: 2,
            offsets,
        };
        let shapes = [shape("a", 5, 2, vec![0, 1]), shape("b", 3, 0, vec![0, 1, 4]), shape("c", 2, 1, vec![0])];
        let gamma = Ext([F::new(7), F::new(11), F::new(13)]);
        for (s, c) in shapes.iter().zip(deep_coeffs(&shapes, gamma)) {
            assert_eq!(c.offset_scale.len(), s.offsets.len());
            assert_eq!(c.offset_scale[0], Ext::ONE);
            for (i, &k) in c.offset_scale.iter().enumerate() {
                let scaled = |first: &[Ext]| first.iter().map(|&v| v * k).collect::<Vec<_>>();
                assert_eq!(c.main[i], scaled(&c.main[0]), "{} main at offset {i}", s.name);
                assert_eq!(c.aux[i], scaled(&c.aux[0]), "{} aux at offset {i}", s.name);
            }
        }
    }
}
