//! What a table of a statement is: an AIR over fixed, main and auxiliary
//! columns, and a machine of one or more such tables proven together.

use backend_api::{Backend, BackendError, ColMatrix, ConstraintSystem, Ctx, Ext, LogUp, LogUpInputs, F};

/// One table: its columns and constraints.
///
/// Main columns are base-field and committed first. Auxiliary columns are
/// extension-field and built after the challenges are drawn from the main
/// commitments: the LogUp columns of the table's interactions. Fixed columns are
/// known to the verifier, which evaluates them itself.
pub trait Air: Send + Sync {
    /// A short name, used in errors, logs and cross-check reports.
    fn name(&self) -> &str;

    /// The constraints, built once. Their layout fixes the column counts,
    /// the number of challenges and public inputs the table expects.
    fn constraints(&self) -> &ConstraintSystem;

    /// A main column's name, for reports (the soundness harness, checkers).
    fn column_name(&self, col: usize) -> String {
        format!("main[{col}]")
    }

    /// Fixed columns; when present, the table's height is theirs.
    fn fixed_trace(&self) -> Option<&ColMatrix> {
        None
    }

    /// The table's LogUp interactions. When present, its auxiliary trace is
    /// exactly the columns they define (built by the backend, see
    /// `backend_api::LogUpOps`) and its one auxiliary value is their sum,
    /// readable by constraints as `Expr::aux_value(0)` and checked across
    /// tables by [`Machine::check_aux_values`].
    fn logup(&self) -> Option<&LogUp> {
        None
    }
}

/// Whether a table's layout declares the auxiliary columns and values its
/// [`Air::logup`] defines (none without interactions), with challenge
/// indices the machine draws.
pub fn check_aux_layout(air: &dyn Air, num_challenges: usize) -> Result<(), String> {
    let l = air.constraints().layout;
    let (width, values) = match air.logup() {
        Some(logup) => {
            logup.check()?;
            let top = logup.z.max(logup.alpha);
            if top >= num_challenges {
                return Err(format!("its interactions use challenge {top}, the machine draws {num_challenges}"));
            }
            let e = &logup.eval.layout;
            if (e.main_width, e.fixed_width) != (l.main_width, l.fixed_width) {
                return Err("its interactions were compiled for other column counts".into());
            }
            (logup.aux_width(), 1)
        }
        None => (0, 0),
    };
    if (l.aux_width, l.num_aux_values) != (width, values) {
        return Err(format!(
            "the layout declares {} auxiliary columns and {} values, its interactions define {width} and {values}",
            l.aux_width, l.num_aux_values
        ));
    }
    Ok(())
}

/// A table's auxiliary trace and values built on `backend` and brought to
/// the host (flattened: 3 base columns per extension column); empty without
/// interactions. For checkers and tests; the prover keeps it on the device.
pub fn host_aux<B: Backend>(
    backend: &B,
    air: &dyn Air,
    main: &ColMatrix,
    challenges: &[Ext],
) -> Result<(ColMatrix, Vec<Ext>), BackendError> {
    let Some(logup) = air.logup() else {
        return Ok((ColMatrix::new(0, main.height(), vec![]), vec![]));
    };
    let ctx = Ctx::table(air.name());
    let main = backend.upload(&ctx, main)?;
    let fixed = air.fixed_trace().map(|f| backend.upload(&ctx, f)).transpose()?;
    let (z, alpha) = (challenges[logup.z], challenges[logup.alpha]);
    let inputs = LogUpInputs { logup, main: &main, fixed: fixed.as_ref(), z, alpha };
    let (aux, sum) = backend.logup_aux(&ctx, &inputs)?;
    Ok((backend.download(&ctx, &aux)?, vec![sum]))
}

/// A statement of one or more tables proven with one transcript.
pub trait Machine: Sync {
    fn tables(&self) -> Vec<&dyn Air>;

    /// Challenges drawn after the main commitments, shared by all tables.
    fn num_challenges(&self) -> usize {
        0
    }

    /// Cross-table checks on the auxiliary values (e.g. every LogUp bus
    /// sums to what the public inputs imply). Run by prover and verifier.
    fn check_aux_values(&self, _publics: &[F], _challenges: &[Ext], _aux_values: &[Vec<Ext>]) -> Result<(), String> {
        Ok(())
    }
}

/// A single AIR is a machine of one table.
pub struct SingleTable<A: Air>(pub A);

impl<A: Air> Machine for SingleTable<A> {
    fn tables(&self) -> Vec<&dyn Air> {
        vec![&self.0]
    }
    fn num_challenges(&self) -> usize {
        self.0.constraints().layout.num_challenges
    }
}
