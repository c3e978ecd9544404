//! Linux's `net/ipv4/`: TCP's rules the loopback sockets follow.

pub mod tcp;
pub mod tcp_input;
pub mod tcp_output;
