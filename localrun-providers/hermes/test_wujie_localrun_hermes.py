#!/usr/bin/env python3
"""Tests of wujie-localrun-hermes: state.db rows to events, keys, history, which session is
followed, the refusal rules.

    python3 localrun-providers/hermes/test_wujie_localrun_hermes.py

The database is built with the columns Hermes Agent 0.19.0 gives `sessions` and `messages`
(the ones the adapter reads), and filled as Hermes fills it: one row per message, a global
message id, cumulative token counters on the session row.
"""
import importlib.machinery
import importlib.util
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ADAPTER = os.path.join(HERE, "wujie-localrun-hermes")


def load_adapter():
    loader = importlib.machinery.SourceFileLoader("wujie_localrun_hermes", ADAPTER)
    spec = importlib.util.spec_from_loader(loader.name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


hermes = load_adapter()

SCHEMA = """
CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT NOT NULL, model TEXT,
    parent_session_id TEXT, started_at REAL NOT NULL, ended_at REAL, end_reason TEXT,
    input_tokens INTEGER DEFAULT 0, output_tokens INTEGER DEFAULT 0,
    cache_read_tokens INTEGER DEFAULT 0, cache_write_tokens INTEGER DEFAULT 0,
    reasoning_tokens INTEGER DEFAULT 0, cwd TEXT, title TEXT);
CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL,
    role TEXT NOT NULL, content TEXT, tool_call_id TEXT, tool_calls TEXT, tool_name TEXT,
    timestamp REAL NOT NULL, finish_reason TEXT, reasoning TEXT,
    active INTEGER NOT NULL DEFAULT 1);
"""
CWD = "/home/user/work"


class Hermes:
    """Writes state.db as Hermes does (WAL, a connection of its own)."""

    def __init__(self, path):
        self.db = sqlite3.connect(path, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.executescript(SCHEMA)
        self.clock = 1000.0

    def session(self, sid, cwd=CWD, parent=None, title=None):
        self.clock += 1
        self.db.execute("INSERT INTO sessions (id, source, model, parent_session_id, started_at,"
                        " cwd, title) VALUES (?, 'cli', 'mock-model', ?, ?, ?, ?)",
                        (sid, parent, self.clock, cwd, title))

    def say(self, sid, role, content=None, **fields):
        self.clock += 1
        columns = ["session_id", "role", "content", "timestamp", *fields]
        values = [sid, role, content, self.clock, *fields.values()]
        self.db.execute(f"INSERT INTO messages ({', '.join(columns)}) VALUES "
                        f"({', '.join('?' * len(values))})", values)

    def tokens(self, sid, inp, out, cache=0):
        self.db.execute("UPDATE sessions SET input_tokens = input_tokens + ?, "
                        "output_tokens = output_tokens + ?, cache_read_tokens = "
                        "cache_read_tokens + ? WHERE id = ?", (inp, out, cache, sid))

    def end(self, sid, reason):
        self.db.execute("UPDATE sessions SET ended_at = ?, end_reason = ? WHERE id = ?",
                        (self.clock, reason, sid))

    def tool_turn(self, sid, prompt="please run echo hello"):
        self.say(sid, "user", prompt)
        calls = [{"id": "call_34", "type": "function", "function": {
            "name": "terminal", "arguments": json.dumps({"command": "echo hello"})}}]
        self.say(sid, "assistant", "Running it.", tool_calls=json.dumps(calls),
                 finish_reason="tool_calls")
        self.tokens(sid, 10, 3)
        self.say(sid, "tool", json.dumps({"output": "hello", "exit_code": 0, "error": None}),
                 tool_call_id="call_34")
        self.say(sid, "assistant", "done", finish_reason="stop", reasoning="It worked.")
        self.tokens(sid, 20, 2, cache=5)


class Case(unittest.TestCase):
    def setUp(self):
        handle, self.path = tempfile.mkstemp(suffix=".db")
        os.close(handle)
        os.unlink(self.path)
        self.hermes = Hermes(self.path)
        self.addCleanup(lambda: [os.path.exists(p) and os.unlink(p) for p in
                                 (self.path, self.path + "-wal", self.path + "-shm")])
        self.addCleanup(self.hermes.db.close)
        self.events = []

    def follower(self, args=()):
        db = hermes.StateDb(self.path)
        self.addCleanup(db.close)
        return hermes.Follower(hermes.parse_args(list(args)), db, CWD, self.events.append)

    def said(self):
        return [(e["type"], e.get("content") or e.get("output") or e.get("input"))
                for e in self.events if e.get("event") == "message"]

    def sessions(self):
        return [e["session_id"] for e in self.events if e.get("event") == "session"]

    def usage(self):
        return [e["usage"] for e in self.events if "usage" in e]


class Mapping(Case):
    def test_a_tool_turn_maps_to_every_kind_with_hermes_ids_as_keys(self):
        follower = self.follower()
        self.hermes.session("s1")
        self.hermes.tool_turn("s1")
        follower.poll()
        self.assertEqual(self.sessions(), ["s1"])
        self.assertEqual(self.said(), [
            ("user_input", "please run echo hello"),
            ("text", "Running it."),
            ("tool_use", {"command": "echo hello"}),
            ("tool_result", '{"output": "hello", "exit_code": 0, "error": null}'),
            ("thinking", "It worked."),
            ("final", "done"),
        ])
        keys = [e["source_key"] for e in self.events if e.get("event") == "message"]
        self.assertEqual(keys, ["hermes:s1:m1", "hermes:s1:m2:answer",
                                "hermes:s1:call:call_34:use", "hermes:s1:call:call_34:result",
                                "hermes:s1:m4:think", "hermes:s1:m4:answer"])
        tool = [e for e in self.events if e.get("type") == "tool_result"][0]
        self.assertEqual(tool["tool"], "terminal")
        self.assertEqual(self.usage(), [{"provider": "hermes", "model": "mock-model",
                                         "input_tokens": 30, "output_tokens": 5,
                                         "cache_read_tokens": 5, "cache_write_tokens": 0}])

    def test_usage_is_what_each_poll_adds(self):
        follower = self.follower()
        self.hermes.session("s1")
        self.hermes.say("s1", "user", "hi")
        self.hermes.tokens("s1", 10, 1)
        follower.poll()
        self.hermes.tokens("s1", 4, 2)
        follower.poll()
        follower.poll()
        self.assertEqual([(u["input_tokens"], u["output_tokens"]) for u in self.usage()],
                         [(10, 1), (4, 2)])

    def test_replaying_the_same_rows_gives_the_same_events(self):
        self.hermes.session("s1")
        self.hermes.tool_turn("s1")
        runs = []
        for _ in range(2):
            events = []
            mapper = hermes.Mapper(events.append, "s1", {})
            db = hermes.StateDb(self.path)
            for row in db.messages_after(0, "s1"):
                mapper.row(row)
            db.close()
            runs.append(events)
        self.assertEqual(runs[0], runs[1])

    def test_an_interrupted_answer_is_text_and_bad_tool_calls_are_skipped(self):
        follower = self.follower()
        self.hermes.session("s1")
        self.hermes.say("s1", "user", "write a poem")
        self.hermes.say("s1", "assistant", "Roses", finish_reason=None, tool_calls="not json")
        follower.poll()
        self.assertEqual(self.said(), [("user_input", "write a poem"), ("text", "Roses")])


class Following(Case):
    def test_a_new_session_is_the_first_one_created_after_start_in_this_directory(self):
        self.hermes.session("old")
        self.hermes.say("old", "user", "old prompt")
        follower = self.follower()
        self.hermes.session("elsewhere", cwd="/somewhere/else")
        self.hermes.say("elsewhere", "user", "not ours")
        self.hermes.say("old", "user", "another terminal")  # an existing one going on
        follower.poll()
        self.assertEqual(self.events, [])
        self.hermes.session("mine")
        self.hermes.say("mine", "user", "hello")
        follower.poll()
        self.assertEqual((self.sessions(), self.said()), (["mine"], [("user_input", "hello")]))

    def test_resume_reports_only_new_turns_and_not_the_old_usage(self):
        self.hermes.session("s1", title="storage plan")
        self.hermes.tool_turn("s1")
        for args in (["--resume", "s1"], ["-r", "storage plan"], ["-c"], ["--continue=storage plan"]):
            with self.subTest(args=args):
                self.events.clear()
                follower = self.follower(args)
                follower.poll()
                self.assertEqual((self.sessions(), self.said(), self.usage()), (["s1"], [], []))
        self.hermes.say("s1", "user", "again")
        self.hermes.say("s1", "assistant", "pong", finish_reason="stop")
        self.hermes.tokens("s1", 7, 1)
        follower.poll()
        self.assertEqual(self.said(), [("user_input", "again"), ("final", "pong")])
        self.assertEqual([(u["input_tokens"], u["output_tokens"]) for u in self.usage()],
                         [(7, 1)])

    def test_new_resume_and_compression_in_the_repl_move_the_sync(self):
        follower = self.follower()
        self.hermes.session("s1")
        self.hermes.say("s1", "user", "one")
        follower.poll()
        # /new: the session ends, a new row (without a cwd) gets the next prompt
        self.hermes.end("s1", "new_session")
        self.hermes.session("s2", cwd=None)
        self.hermes.say("s2", "user", "two")
        follower.poll()
        # /resume s1: s2 ends, s1 goes on; its history is not reported again
        self.hermes.end("s2", "resumed_other")
        self.hermes.say("s1", "user", "three")
        follower.poll()
        # compression: a child session carries on
        self.hermes.end("s1", "compression")
        self.hermes.session("s3", parent="s1")
        self.hermes.say("s3", "user", "four")
        follower.poll()
        self.assertEqual(self.sessions(), ["s1", "s2", "s1", "s3"])
        self.assertEqual([c for _, c in self.said()], ["one", "two", "three", "four"])
        # once moved to s3, another session writing is not followed
        self.hermes.say("s2", "user", "other terminal")
        follower.poll()
        self.assertEqual(self.sessions(), ["s1", "s2", "s1", "s3"])

    def test_a_resumed_session_that_was_left_before_is_not_a_switch(self):
        self.hermes.session("s1")
        self.hermes.say("s1", "user", "one")
        self.hermes.end("s1", "new_session")  # left earlier with /new
        follower = self.follower(["-r", "s1"])
        follower.poll()
        self.hermes.say("s1", "user", "two")
        self.hermes.session("other")
        self.hermes.say("other", "user", "another terminal")
        follower.poll()
        self.assertEqual((self.sessions(), [c for _, c in self.said()]), (["s1"], ["two"]))


class Arguments(unittest.TestCase):
    def test_one_shot_modes_the_ink_tui_and_other_commands_are_refused(self):
        for args in (["-z", "hi"], ["--oneshot=hi"], ["chat", "-q", "hi"], ["chat", "--query", "x"],
                     ["chat", "-Q"], ["--tui"], ["acp"], ["sessions", "list"], ["-r"]):
            with self.subTest(args=args), self.assertRaises(hermes.Refused):
                hermes.parse_args(args)

    def test_chat_resume_and_continue(self):
        self.assertEqual(hermes.parse_args([]).mode, "new")
        self.assertEqual(hermes.parse_args(["chat", "--yolo", "-m", "x"]).mode, "new")
        launch = hermes.parse_args(["--resume", "20261201_071244_ec618d"])
        self.assertEqual((launch.mode, launch.session), ("resume", "20261201_071244_ec618d"))
        self.assertEqual(launch.argv, ["--resume", "20261201_071244_ec618d"])
        self.assertEqual(hermes.parse_args(["-c"]).session, None)
        self.assertEqual(hermes.parse_args(["-c", "my plan"]).session, "my plan")


class Main(unittest.TestCase):
    def test_refusals_exit_2_with_the_reason_and_no_event(self):
        env = dict(os.environ, WUJIE_LOCALRUN_SESSION_ID="d-1")
        done = subprocess.run([sys.executable, ADAPTER, "-z", "hi"], env=env, text=True,
                              capture_output=True, stdin=subprocess.DEVNULL, timeout=30)
        self.assertEqual((done.returncode, done.stdout), (2, ""))
        self.assertIn("--oneshot", done.stderr.replace("-z", "--oneshot"))

    def test_it_needs_a_run_or_a_discussion(self):
        env = {k: v for k, v in os.environ.items() if not k.startswith("WUJIE_")}
        done = subprocess.run([sys.executable, ADAPTER], env=env, text=True,
                              capture_output=True, stdin=subprocess.DEVNULL, timeout=30)
        self.assertEqual(done.returncode, 2)
        self.assertIn("WUJIE_LOCALRUN_SESSION_ID", done.stderr)


if __name__ == "__main__":
    unittest.main()
