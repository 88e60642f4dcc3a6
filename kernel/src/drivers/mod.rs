//! Device drivers.
pub mod bcm2835_pm;
pub mod pl011;
pub mod pl031;
