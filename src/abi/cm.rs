//! placeholder
use super::*;
