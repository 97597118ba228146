//! What a table of a statement is: an AIR over fixed, main and auxiliary
//! columns, and a machine of one or more such tables proven together.

use backend_api::{ColMatrix, ConstraintSystem, Ext, F};

/// The auxiliary trace of one table, built once the challenges are drawn.
#[derive(Clone, Debug, Default)]
pub struct AuxTrace {
    /// Extension-field columns, each as long as the main trace.
    pub columns: Vec<Vec<Ext>>,
    /// Values committed with the auxiliary trace (e.g. a LogUp bus sum),
    /// readable by constraints as `Expr::aux_value(i)` and checked across
    /// tables by [`Machine::check_aux_values`].
    pub values: Vec<Ext>,
}

/// One table: its columns and constraints.
///
/// Main columns are base-field and committed first. Auxiliary columns are
/// extension-field and built after the challenges are drawn from the main
/// commitments (so they can carry LogUp running sums). Fixed columns are
/// known to the verifier, which evaluates them itself.
pub trait Air: Send + Sync {
    /// A short name, used in errors, logs and cross-check reports.
    fn name(&self) -> &str;

    /// The constraints, built once. Their layout fixes the column counts,
    /// the number of challenges and public inputs the table expects.
    fn constraints(&self) -> &ConstraintSystem;

    /// Fixed columns; when present, the table's height is theirs.
    fn fixed_trace(&self) -> Option<&ColMatrix> {
        None
    }

    /// Builds the auxiliary trace from the main trace and the challenges.
    fn build_aux(&self, _main: &ColMatrix, _publics: &[F], _challenges: &[Ext]) -> AuxTrace {
        AuxTrace::default()
    }
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
