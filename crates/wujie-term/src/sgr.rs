//! Drawing attributes as SGR (`CSI … m`) sets them, kept so the overlay can put an adapter's
//! own saved cursor (DECSC, which also saves the attributes) back after borrowing the slot.

/// A colour as SGR names it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
enum Color {
    #[default]
    Default,
    Indexed(u8),
    Rgb(u8, u8, u8),
}

const BOLD: u16 = 1;
const DIM: u16 = 1 << 1;
const ITALIC: u16 = 1 << 2;
const BLINK: u16 = 1 << 3;
const INVERSE: u16 = 1 << 4;
const HIDDEN: u16 = 1 << 5;
const STRIKE: u16 = 1 << 6;
const OVERLINE: u16 = 1 << 7;

/// The attributes in effect.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub(crate) struct Sgr {
    flags: u16,
    /// 0 none, 1 single, 2 double, 3 curly, 4 dotted, 5 dashed.
    underline: u8,
    fg: Color,
    bg: Color,
    underline_color: Color,
}

impl Sgr {
    /// Applies one `CSI … m`: each parameter with its colon-separated sub-parameters.
    pub(crate) fn apply<'a>(&mut self, params: impl IntoIterator<Item = &'a [u16]>) {
        let mut params = params.into_iter().peekable();
        if params.peek().is_none() {
            *self = Sgr::default();
        }
        while let Some(param) = params.next() {
            let Some(&code) = param.first() else { continue };
            match code {
                0 => *self = Sgr::default(),
                1 => self.flags |= BOLD,
                2 => self.flags |= DIM,
                3 => self.flags |= ITALIC,
                4 => self.underline = param.get(1).map_or(1, |&style| style.min(5) as u8),
                5 | 6 => self.flags |= BLINK,
                7 => self.flags |= INVERSE,
                8 => self.flags |= HIDDEN,
                9 => self.flags |= STRIKE,
                21 => self.underline = 2,
                22 => self.flags &= !(BOLD | DIM),
                23 => self.flags &= !ITALIC,
                24 => self.underline = 0,
                25 => self.flags &= !BLINK,
                27 => self.flags &= !INVERSE,
                28 => self.flags &= !HIDDEN,
                29 => self.flags &= !STRIKE,
                53 => self.flags |= OVERLINE,
                55 => self.flags &= !OVERLINE,
                30..=37 => self.fg = Color::Indexed((code - 30) as u8),
                39 => self.fg = Color::Default,
                40..=47 => self.bg = Color::Indexed((code - 40) as u8),
                49 => self.bg = Color::Default,
                59 => self.underline_color = Color::Default,
                90..=97 => self.fg = Color::Indexed((code - 90 + 8) as u8),
                100..=107 => self.bg = Color::Indexed((code - 100 + 8) as u8),
                38 | 48 | 58 => {
                    let color = if param.len() > 1 {
                        extended(&param[1..], true)
                    } else {
                        // `38;5;n` / `38;2;r;g;b`: the colour takes the parameters that follow
                        // (gathered on the stack: this runs for every coloured run of output).
                        let mut rest = [0u16; 4];
                        let mut len = 0;
                        while len < rest.len() && (len < 2 || rest[0] == 2) {
                            let Some(p) = params.next() else { break };
                            rest[len] = p.first().copied().unwrap_or(0);
                            len += 1;
                        }
                        extended(&rest[..len], false)
                    };
                    if let Some(color) = color {
                        match code {
                            38 => self.fg = color,
                            48 => self.bg = color,
                            _ => self.underline_color = color,
                        }
                    }
                }
                _ => {}
            }
        }
    }

    /// `CSI 0;… m`: the sequence that sets exactly these attributes from any others.
    pub(crate) fn sequence(&self) -> Vec<u8> {
        let mut out = String::from("\x1b[0");
        for (flag, code) in [
            (BOLD, "1"),
            (DIM, "2"),
            (ITALIC, "3"),
            (BLINK, "5"),
            (INVERSE, "7"),
            (HIDDEN, "8"),
            (STRIKE, "9"),
            (OVERLINE, "53"),
        ] {
            if self.flags & flag != 0 {
                out.push(';');
                out.push_str(code);
            }
        }
        match self.underline {
            0 => {}
            1 => out.push_str(";4"),
            style => out.push_str(&format!(";4:{style}")),
        }
        for (color, base) in [(self.fg, 38), (self.bg, 48), (self.underline_color, 58)] {
            match color {
                Color::Default => {}
                Color::Indexed(n) if n < 8 && base != 58 => {
                    out.push_str(&format!(";{}", base - 8 + u16::from(n)))
                }
                Color::Indexed(n) if n < 16 && base != 58 => {
                    out.push_str(&format!(";{}", base + 52 + u16::from(n) - 8))
                }
                Color::Indexed(n) => out.push_str(&format!(";{base};5;{n}")),
                Color::Rgb(r, g, b) => out.push_str(&format!(";{base};2;{r};{g};{b}")),
            }
        }
        out.push('m');
        out.into_bytes()
    }
}

/// The colour after `38`/`48`/`58`: `5;n` or `2;r;g;b` (with colons, `2` may be followed by an
/// empty colour-space id: `2::r:g:b`).
fn extended(rest: &[u16], colons: bool) -> Option<Color> {
    let byte = |v: u16| u8::try_from(v).ok();
    match rest {
        [5, n, ..] => Some(Color::Indexed(byte(*n)?)),
        [2, _, r, g, b, ..] if colons => Some(Color::Rgb(byte(*r)?, byte(*g)?, byte(*b)?)),
        [2, r, g, b, ..] => Some(Color::Rgb(byte(*r)?, byte(*g)?, byte(*b)?)),
        _ => None,
    }
}
