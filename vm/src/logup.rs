//! The VM's LogUp conventions over `backend_api::logup`: which challenges
//! are `z` and `alpha`, and the host fingerprint the verifier uses for the
//! public io contributions. All buses share the two challenges; the bus
//! tag keeps them apart, so one total per machine checks them all.

use backend_api::{Ext, F};

pub use backend_api::logup::Interaction;

pub const CH_Z: usize = 0;
pub const CH_ALPHA: usize = 1;
pub const NUM_CHALLENGES: usize = 2;

/// `z - fingerprint` of a tuple on the host.
pub fn denominator(challenges: &[Ext], tag: u64, values: &[F]) -> Ext {
    backend_api::logup::denominator(challenges[CH_Z], challenges[CH_ALPHA], tag, values)
}
