//! Which devices a run uses: ordinals given through the API or as the
//! CLI's `--devices 0,1|all`. Devices are chosen by the driver's ordinal
//! only; `CUDA_VISIBLE_DEVICES` is the driver's business, read once when
//! it initialises, and never consulted or changed here (seed 004: a
//! variable set after that point silently changed nothing, and workers
//! meant for two cards shared one).

use crate::{probe, CudaBackend, CudaConfig};
use backend_api::BackendError;
use std::fmt;

/// A device list as written: every device, or these ordinals.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeviceSpec {
    All,
    Ordinals(Vec<usize>),
}

/// A device list that cannot be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SelectError {
    Empty,
    NotAnOrdinal(String),
    Duplicate(usize),
    OutOfRange { ordinal: usize, available: usize },
    NoDevices,
}

impl fmt::Display for SelectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SelectError::Empty => f.write_str("no device given (expected ordinals like 0,1 or `all`)"),
            SelectError::NotAnOrdinal(s) => {
                write!(f, "`{s}` is not a device ordinal (expected ordinals like 0,1 or `all`)")
            }
            SelectError::Duplicate(o) => write!(f, "device {o} is listed twice"),
            SelectError::OutOfRange { ordinal, available } => {
                write!(f, "there is no device {ordinal}: {available} CUDA device(s), ordinals 0..{available}")
            }
            SelectError::NoDevices => f.write_str("no CUDA device found"),
        }
    }
}

impl std::error::Error for SelectError {}

impl DeviceSpec {
    /// `all`, or comma-separated ordinals (`0`, `0,1`, ` 1 , 3 `).
    pub fn parse(spec: &str) -> Result<DeviceSpec, SelectError> {
        let spec = spec.trim();
        if spec.eq_ignore_ascii_case("all") {
            return Ok(DeviceSpec::All);
        }
        if spec.is_empty() {
            return Err(SelectError::Empty);
        }
        let mut out = Vec::new();
        for part in spec.split(',').map(str::trim) {
            let o: usize = part.parse().map_err(|_| SelectError::NotAnOrdinal(part.to_string()))?;
            if out.contains(&o) {
                return Err(SelectError::Duplicate(o));
            }
            out.push(o);
        }
        Ok(DeviceSpec::Ordinals(out))
    }

    /// The ordinals, checked against the `available` devices.
    pub fn resolve(&self, available: usize) -> Result<Vec<usize>, SelectError> {
        if available == 0 {
            return Err(SelectError::NoDevices);
        }
        match self {
            DeviceSpec::All => Ok((0..available).collect()),
            DeviceSpec::Ordinals(v) => match v.iter().find(|&&o| o >= available) {
                Some(&ordinal) => Err(SelectError::OutOfRange { ordinal, available }),
                None => Ok(v.clone()),
            },
        }
    }
}

/// One backend per device of `spec`, each with `config` (its own streams
/// and memory gate). `Unavailable` when a device is missing or the list is
/// unusable.
pub fn open_devices(spec: &DeviceSpec, config: &CudaConfig) -> Result<Vec<CudaBackend>, BackendError> {
    let available = probe()?.len();
    let ordinals = spec.resolve(available).map_err(|e| BackendError::Unavailable(e.to_string()))?;
    ordinals.into_iter().map(|o| CudaBackend::with_config(o, *config)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_lists_parse_and_resolve_by_ordinal() {
        assert_eq!(DeviceSpec::parse("all"), Ok(DeviceSpec::All));
        assert_eq!(DeviceSpec::parse(" 1 , 0 "), Ok(DeviceSpec::Ordinals(vec![1, 0])));
        assert_eq!(DeviceSpec::All.resolve(2), Ok(vec![0, 1]));
        assert_eq!(DeviceSpec::parse("1").unwrap().resolve(2), Ok(vec![1]));
        assert_eq!(DeviceSpec::parse(""), Err(SelectError::Empty));
        assert_eq!(DeviceSpec::parse("0,0"), Err(SelectError::Duplicate(0)));
        assert_eq!(DeviceSpec::parse("0,x"), Err(SelectError::NotAnOrdinal("x".into())));
        assert_eq!(DeviceSpec::parse("-1"), Err(SelectError::NotAnOrdinal("-1".into())));
        let e = DeviceSpec::parse("0,2").unwrap().resolve(2).unwrap_err();
        assert_eq!(e, SelectError::OutOfRange { ordinal: 2, available: 2 });
        assert!(e.to_string().contains("no device 2"), "{e}");
        assert_eq!(DeviceSpec::All.resolve(0), Err(SelectError::NoDevices));
    }
}
