//! `arch/ppc/kernel`: the 8xx's exception vectors and boot-time MMU setup (`head_8xx.S`).

pub mod head_8xx;
