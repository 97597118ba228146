//! The Kiln VM (in progress).
