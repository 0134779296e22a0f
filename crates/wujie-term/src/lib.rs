//! Pure terminal logic: input scanner, trigger detector, overlay renderer. No I/O.
