//! The reference backend (in progress).
