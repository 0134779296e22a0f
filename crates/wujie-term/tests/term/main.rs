//! The pure terminal logic: scanner, triggers, line editor, overlay and menu card, inline mode, the screen model, text made safe for a terminal.

mod inline;
mod line_editor;
mod line_trigger;
mod menu_card;
mod overlay;
mod overlay_margin;
mod scanner;
mod screen_model;
mod terminal_modes;
mod terminal_safe;
