//! The Arm PrimeCell PL011 UART (Arm DDI 0183G), polled, for the console.
#![allow(unsafe_code)] // MMIO: the register block is reached through a raw mapping.

crate::notrace_module!();

use tock_registers::interfaces::{Readable, Writeable};
use tock_registers::registers::{ReadOnly, ReadWrite, WriteOnly};
use tock_registers::{register_bitfields, register_structs};

register_bitfields! {u32,
    /// Data Register.
    DR [
        /// Character to send / received.
        DATA OFFSET(0) NUMBITS(8) []
    ],
    /// Flag Register.
    FR [
        /// Transmit FIFO full.
        TXFF OFFSET(5) NUMBITS(1) [],
        /// Receive FIFO empty.
        RXFE OFFSET(4) NUMBITS(1) [],
        /// UART busy sending.
        BUSY OFFSET(3) NUMBITS(1) []
    ],
    /// Integer part of the baud rate divisor.
    IBRD [
        /// Divisor.
        BAUD_DIVINT OFFSET(0) NUMBITS(16) []
    ],
    /// Fractional part of the baud rate divisor.
    FBRD [
        /// Divisor, in 64ths.
        BAUD_DIVFRAC OFFSET(0) NUMBITS(6) []
    ],
    /// Line Control Register.
    LCR_H [
        /// Word length.
        WLEN OFFSET(5) NUMBITS(2) [EightBit = 0b11],
        /// FIFOs enabled.
        FEN OFFSET(4) NUMBITS(1) []
    ],
    /// Control Register.
    CR [
        /// Receive enable.
        RXE OFFSET(9) NUMBITS(1) [],
        /// Transmit enable.
        TXE OFFSET(8) NUMBITS(1) [],
        /// UART enable.
        UARTEN OFFSET(0) NUMBITS(1) []
    ],
    /// Interrupt Clear Register.
    ICR [
        /// Clear all interrupts.
        ALL OFFSET(0) NUMBITS(11) []
    ]
}

register_structs! {
    /// PL011 registers.
    #[allow(non_snake_case)]
    pub Pl011Regs {
        (0x00 => DR: ReadWrite<u32, DR::Register>),
        (0x04 => _reserved0),
        (0x18 => FR: ReadOnly<u32, FR::Register>),
        (0x1c => _reserved1),
        (0x24 => IBRD: WriteOnly<u32, IBRD::Register>),
        (0x28 => FBRD: WriteOnly<u32, FBRD::Register>),
        (0x2c => LCR_H: WriteOnly<u32, LCR_H::Register>),
        (0x30 => CR: WriteOnly<u32, CR::Register>),
        (0x34 => _reserved2),
        (0x44 => ICR: WriteOnly<u32, ICR::Register>),
        (0x48 => @END),
    }
}

/// Size of the register block.
pub const PL011_SIZE: usize = 0x1000;

/// A mapped PL011.
#[derive(Clone, Copy)]
pub struct Pl011 {
    /// Virtual address of the register block.
    base: usize,
}

impl Pl011 {
    /// Wraps the registers mapped at `va`.
    ///
    /// # Safety
    /// `va` must map a PL011's registers as Device memory for the rest of the
    /// kernel's life.
    pub unsafe fn new(va: usize) -> Pl011 {
        Pl011 { base: va }
    }

    fn regs(&self) -> &Pl011Regs {
        // SAFETY: `new`'s contract: `base` maps a PL011 for the kernel's
        // life; the registers are only used through volatile MMIO accesses,
        // which tolerate concurrent use.
        unsafe { &*(self.base as *const Pl011Regs) }
    }

    /// Programs 115200 8N1 if the UART clock is known, and enables the
    /// UART. (Firmware or QEMU may already have done so.)
    pub fn init(&self, clock_hz: Option<u32>) {
        if let Some(clk) = clock_hz {
            self.flush();
            self.regs().CR.set(0);
            // divisor = clk / (16 * baud), in 1/64ths, rounded.
            let div64 = (clk as u64 * 4 + 115_200 / 2) / 115_200;
            self.regs().IBRD.write(IBRD::BAUD_DIVINT.val((div64 >> 6) as u32));
            self.regs().FBRD.write(FBRD::BAUD_DIVFRAC.val((div64 & 63) as u32));
            self.regs().LCR_H.write(LCR_H::WLEN::EightBit + LCR_H::FEN::SET);
            self.regs().ICR.write(ICR::ALL::SET);
        }
        self.regs().CR.write(CR::UARTEN::SET + CR::TXE::SET + CR::RXE::SET);
    }

    /// Sends one byte, waiting for FIFO space.
    pub fn putc(&self, c: u8) {
        while self.regs().FR.is_set(FR::TXFF) {
            core::hint::spin_loop();
        }
        self.regs().DR.write(DR::DATA.val(c as u32));
    }

    /// A received byte, if any.
    pub fn getc(&self) -> Option<u8> {
        if self.regs().FR.is_set(FR::RXFE) {
            None
        } else {
            Some(self.regs().DR.read(DR::DATA) as u8)
        }
    }

    /// Waits until everything sent has left the UART.
    pub fn flush(&self) {
        while self.regs().FR.is_set(FR::BUSY) {
            core::hint::spin_loop();
        }
    }
}
