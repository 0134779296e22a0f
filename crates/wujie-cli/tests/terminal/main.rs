//! The interactive terminal host on a real PTY (vt100 screen) and in tmux: the /wujie menu, cards, typing, resizes, job control.

mod card;
mod handoff_card;
mod host;
mod job_control;
mod promoted;
mod replies;
mod resize;
mod small_screens;
mod stalled;
mod start;
mod typing;
