#[allow(dead_code)]
mod symbols;

fn main() {}
