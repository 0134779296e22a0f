#!/usr/bin/env python3
"""Tests of wujie-localrun-grok: transcript mapping, keys, baseline, which transcript is
followed, the refusal rules, input tracking and the issue context.

    python3 localrun-providers/grok/test_wujie_localrun_grok.py

testdata/tool-call-and-resumes.updates.jsonl was written by the real grok 0.2.111 in its TUI
(against a scripted model): a turn with a shell tool call, thinking and an answer, then two
more turns after `/resume` and `--resume` (home paths replaced by /home/user).
"""
import http.server
import importlib.machinery
import importlib.util
import json
import os
import pty
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ADAPTER = os.path.join(HERE, "wujie-localrun-grok")
RECORDED = os.path.join(HERE, "testdata", "tool-call-and-resumes.updates.jsonl")
SID = "d58d4eaf-2c25-4b81-95fc-d5f421c305c3"


def load_adapter():
    loader = importlib.machinery.SourceFileLoader("wujie_localrun_grok", ADAPTER)
    spec = importlib.util.spec_from_loader(loader.name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


grok = load_adapter()


def map_file(path, baseline=0):
    events = []
    mapper = grok.Mapper(events.append)
    tail = grok.Transcript(path, baseline)
    for record, offset in tail.lines():
        mapper.line(record, offset)
    tail.close()
    mapper.finish()
    return events


def messages(events):
    return [(e["type"], e.get("content") or e.get("output") or e.get("input"))
            for e in events if e.get("event") == "message"]


def line(session, kind, event_n=None, prompt=None, method="session/update", **update):
    meta = {}
    if event_n is not None:
        meta["eventId"] = f"{session}-{event_n}"
    if prompt:
        meta["promptId"] = prompt
    return json.dumps({"timestamp": 1, "method": method, "params": {
        "sessionId": session, "update": {"sessionUpdate": kind, **update}, "_meta": meta}})


def text(t):
    return {"type": "text", "text": t}


class RecordedTranscript(unittest.TestCase):
    def test_maps_every_kind_in_order(self):
        events = map_file(RECORDED)
        self.assertEqual(messages(events), [
            ("user_input", "please run echo hello"),
            ("text", "Running it."),
            ("tool_use", {"command": "echo hello", "description": "say hello"}),
            ("tool_result", "hello\n"),
            ("thinking", "It worked."),
            ("final", "done"),
            ("user_input", "again"),
            ("final", "pong"),
            ("user_input", "more"),
            ("final", "pong"),
        ])
        tool = [e for e in events if e.get("type") == "tool_use"][0]
        self.assertEqual(tool["tool"], "run_terminal_command")
        self.assertTrue(all(e["source"] == "grok" for e in events if "source" in e))
        usage = [e["usage"] for e in events if "usage" in e]
        self.assertEqual(len(usage), 3)
        self.assertEqual(usage[0], {"provider": "grok", "model": "mock-model", "input_tokens": 20,
                                    "output_tokens": 2, "cache_read_tokens": 0,
                                    "cache_write_tokens": 0})

    def test_keys_come_from_grok_ids_are_unique_and_replay_the_same(self):
        first, second = map_file(RECORDED), map_file(RECORDED)
        self.assertEqual(first, second)
        keys = [e["source_key"] for e in first if e.get("event") == "message"]
        self.assertEqual(len(keys), len(set(keys)), keys)
        self.assertEqual(keys[0], f"grok:{SID}-2")
        self.assertIn(f"grok:{SID}:prompt:", keys[2])
        self.assertTrue(keys[2].endswith(":tool:call_1:use"))
        self.assertTrue(keys[3].endswith(":tool:call_1:result"))
        # Same prompt id on use and result, even though the completed update's own id is used
        self.assertEqual(keys[2].rsplit(":tool:", 1)[0], keys[3].rsplit(":tool:", 1)[0])

    def test_baseline_skips_history(self):
        with open(RECORDED, "rb") as f:
            first_turn = b"".join(f.readline() for _ in range(10))
        events = map_file(RECORDED, baseline=len(first_turn))
        self.assertEqual(messages(events), [
            ("user_input", "again"), ("final", "pong"), ("user_input", "more"), ("final", "pong")])
        # The keys of what is reported are those of the full replay: nothing new on the server.
        full = {e["source_key"] for e in map_file(RECORDED) if "source_key" in e}
        self.assertTrue({e["source_key"] for e in events if "source_key" in e} <= full)


class SyntheticTranscripts(unittest.TestCase):
    def write(self, lines):
        handle, path = tempfile.mkstemp(suffix=".jsonl")
        with os.fdopen(handle, "w") as f:
            f.write("".join(l + "\n" for l in lines))
        self.addCleanup(os.unlink, path)
        return path

    def test_chunks_of_one_block_join_and_only_the_last_block_is_final(self):
        s = "s1"
        path = self.write([
            line(s, "user_message_chunk", 2, content=text("hi")),
            line(s, "agent_message_chunk", 3, "p1", content=text("Hello ")),
            line(s, "agent_message_chunk", 4, "p1", content=text("there.")),
            line(s, "tool_call", 5, "p1", toolCallId="call_1", title="read", rawInput="x"),
            line(s, "tool_call_update", 6, None, toolCallId="call_1", status="failed"),
            line(s, "agent_message_chunk", 7, "p1", content=text("Sorry.")),
            line(s, "turn_completed", 8, method="_x.ai/session/update", prompt_id="p1",
                 stop_reason="end_turn", usage={"inputTokens": 5, "outputTokens": 6}),
        ])
        events = map_file(path)
        self.assertEqual(messages(events), [
            ("user_input", "hi"), ("text", "Hello there."), ("tool_use", {"input": "x"}),
            ("tool_result", "(failed)"), ("final", "Sorry.")])
        self.assertEqual(events[1]["source_key"], "grok:s1-3")
        self.assertEqual(events[-1]["usage"]["model"], "grok")

    def test_a_cancelled_turn_has_no_final_and_no_usage(self):
        s = "s2"
        path = self.write([
            line(s, "user_message_chunk", 2, content=text("write a poem")),
            line(s, "agent_message_chunk", 3, "p1", content=text("Roses")),
            line(s, "turn_completed", 4, method="_x.ai/session/update", prompt_id="p1",
                 stop_reason="cancelled"),
        ])
        events = map_file(path)
        self.assertEqual(messages(events), [("user_input", "write a poem"), ("text", "Roses")])
        self.assertFalse(any("usage" in e for e in events))

    def test_prompt_index_reused_after_rewind_does_not_collide(self):
        s = "s3"
        path = self.write([
            line(s, "user_message_chunk", 2, content=text("one"), _meta={"promptIndex": 0}),
            line(s, "rewind_marker", 3, method="_x.ai/session/update", target_prompt_index=0),
            line(s, "user_message_chunk", 4, content=text("two"), _meta={"promptIndex": 0}),
        ])
        keys = [e["source_key"] for e in map_file(path)]
        self.assertEqual(keys, ["grok:s3-2", "grok:s3-4"])

    def test_a_line_without_an_event_id_is_keyed_by_its_offset(self):
        s = "s4"
        first = line(s, "user_message_chunk", 2, content=text("a"))
        path = self.write([first, line(s, "user_message_chunk", None, content=text("b"))])
        keys = [e["source_key"] for e in map_file(path)]
        self.assertEqual(keys, ["grok:s4-2", f"grok:s4:offset:{len(first) + 1}"])

    def test_a_partly_written_line_waits_for_its_end(self):
        s = "s5"
        whole = line(s, "user_message_chunk", 2, content=text("hello"))
        path = self.write([])
        with open(path, "w") as f:
            f.write(whole[:20])
        events = []
        mapper = grok.Mapper(events.append)
        tail = grok.Transcript(path, 0)
        for record, offset in tail.lines():
            mapper.line(record, offset)
        self.assertEqual(events, [])
        with open(path, "a") as f:
            f.write(whole[20:] + "\n")
        for record, offset in tail.lines():
            mapper.line(record, offset)
        tail.close()
        self.assertEqual(messages(events), [("user_input", "hello")])

    def test_garbage_lines_are_skipped_without_failing(self):
        path = self.write(["not json", "[1,2]", '{"params": 3}', "{}",
                           line("s6", "user_message_chunk", 2, content=text("ok"))])
        self.assertEqual(messages(map_file(path)), [("user_input", "ok")])


class Arguments(unittest.TestCase):
    def test_headless_modes_and_manual_rules_are_refused_with_the_reason(self):
        for args in (["-p", "hi"], ["--single", "hi"], ["--single=hi"], ["-phi"],
                     ["--prompt-file", "f"], ["--prompt-json", "[]"],
                     ["--output-format", "streaming-json"], ["--output-format=json"],
                     ["--json-schema", "{}"], ["--rules", "be nice"], ["--rules=x"],
                     ["agent", "stdio"], ["-m", "x", "models"]):
            with self.subTest(args=args), self.assertRaises(grok.Refused) as refused:
                grok.parse_args(args, "/w")
            self.assertTrue("interactive" in str(refused.exception)
                            or "rules" in str(refused.exception), str(refused.exception))

    def test_a_new_session_gets_a_unique_session_id_and_runs_inline(self):
        a, b = grok.parse_args([], "/w"), grok.parse_args(["fix the bug"], "/w")
        self.assertEqual(a.mode, "new")
        self.assertNotEqual(a.session_id, b.session_id)
        self.assertEqual(a.argv, ["--no-alt-screen", "--session-id", a.session_id])
        self.assertEqual(b.argv, ["--no-alt-screen", "--session-id", b.session_id, "fix the bug"])
        # after the user's `--` everything is a prompt: ours come before it
        c = grok.parse_args(["--", "-p is not an option here"], "/w", rules="r", new_id="n")
        self.assertEqual(c.argv, ["--no-alt-screen", "--rules", "r", "--session-id", "n", "--",
                                  "-p is not an option here"])
        self.assertTrue(grok.looks_like_session_id(a.session_id))

    def test_the_issue_context_goes_in_rules(self):
        launch = grok.parse_args(["-m", "grok-4"], "/w", rules="context", new_id="x")
        self.assertEqual(launch.argv, ["--no-alt-screen", "--rules", "context", "--session-id",
                                       "x", "-m", "grok-4"])

    def test_resume_and_continue(self):
        resume = grok.parse_args(["--resume", SID], "/w")
        self.assertEqual((resume.mode, resume.session_id), ("resume", SID))
        self.assertNotIn("--session-id", resume.argv)
        self.assertEqual(grok.parse_args([f"--resume={SID}"], "/w").session_id, SID)
        self.assertEqual(grok.parse_args(["-r"], "/w").mode, "latest")
        self.assertEqual(grok.parse_args(["-c"], "/w").mode, "latest")
        # -r's value is optional: a prompt after it is a prompt, not an id
        latest = grok.parse_args(["-r", "hello"], "/w")
        self.assertEqual((latest.mode, latest.session_id), ("latest", None))
        # a fork is a new session: ours gets the id
        fork = grok.parse_args(["-r", SID, "--fork-session"], "/w", new_id="n")
        self.assertEqual((fork.mode, fork.session_id), ("new", "n"))
        self.assertEqual(grok.parse_args(["--cwd", "sub", "-c"], "/w").cwd, "/w/sub")
        mine = grok.parse_args(["--session-id", "u"], "/w")
        self.assertEqual((mine.session_id, mine.argv.count("--session-id")), ("u", 1))

    def test_the_cwd_escaping_is_grok_s(self):
        self.assertEqual(grok.escape_cwd("/tmp/a/work dir"), "%2Ftmp%2Fa%2Fwork%20dir")
        self.assertEqual(grok.escape_cwd("/a+b:c@d=e,f;g&h$i~j.k-l_m"),
                         "%2Fa%2Bb%3Ac%40d%3De%2Cf%3Bg%26h%24i~j.k-l_m")
        self.assertEqual(grok.escape_cwd("/é"), "%2F%C3%A9")


class Following(unittest.TestCase):
    """Which transcript is followed, in a GROK_HOME of files written as grok writes them."""

    def setUp(self):
        self.home = tempfile.mkdtemp()
        self.addCleanup(lambda: subprocess.run(["rm", "-rf", self.home]))
        self.cwd = "/home/user/work dir"
        self.events = []

    def transcript(self, session, lines, cwd=None):
        directory = os.path.join(self.home, "sessions", grok.escape_cwd(cwd or self.cwd),
                                 session)
        os.makedirs(directory, exist_ok=True)
        path = os.path.join(directory, "updates.jsonl")
        with open(path, "a") as f:
            f.write("".join(l + "\n" for l in lines))
        return path

    def active(self, *entries):
        with open(os.path.join(self.home, "active_sessions.json"), "w") as f:
            json.dump([{"session_id": s, "pid": p, "cwd": self.cwd} for s, p in entries], f)

    def said(self, kind="user_input"):
        return [e.get("content") for e in self.events if e.get("type") == kind]

    def sessions(self):
        return [e["session_id"] for e in self.events if e.get("event") == "session"]

    def follower(self, args):
        follower = grok.Follower(grok.parse_args(args, self.cwd, new_id="new-1"), self.home,
                                 self.events.append)
        self.addCleanup(follower.close)
        return follower

    def test_a_new_session_is_found_by_its_id(self):
        follower = self.follower([])
        self.transcript("other", [line("other", "user_message_chunk", 2, content=text("x"))])
        follower.poll(100)
        self.assertEqual(self.events, [])
        self.transcript("new-1", [line("new-1", "user_message_chunk", 2, content=text("hi"))],
                        cwd="/elsewhere/worktree")  # --worktree moves it
        follower.poll(100)
        self.assertEqual((self.sessions(), self.said()), (["new-1"], ["hi"]))

    def test_resume_reports_only_what_comes_after_the_history(self):
        self.transcript(SID, [line(SID, "user_message_chunk", 2, content=text("old"))])
        follower = self.follower(["--resume", SID])
        follower.poll(100)
        self.assertEqual((self.sessions(), self.said()), ([SID], []))
        self.transcript(SID, [line(SID, "user_message_chunk", 5, content=text("new"))])
        follower.poll(100)
        self.assertEqual(self.said(), ["new"])

    def test_continue_locks_onto_its_process_s_session_and_stays(self):
        self.transcript("a", [line("a", "user_message_chunk", 2, content=text("a-old"))])
        self.transcript("b", [line("b", "user_message_chunk", 2, content=text("b-old"))])
        follower = self.follower(["-c"])
        self.active(("a", 7), ("b", 100))
        self.transcript("a", [line("a", "user_message_chunk", 3, content=text("a-other"))])
        follower.poll(100)
        self.transcript("b", [line("b", "user_message_chunk", 3, content=text("b-new"))])
        follower.poll(100)
        self.assertEqual((self.sessions(), self.said()), (["b"], ["b-new"]))
        # another terminal's grok in the same cwd goes on: never followed
        self.transcript("a", [line("a", "user_message_chunk", 4, content=text("a-more"))])
        follower.poll(100)
        self.assertEqual(self.said(), ["b-new"])

    def test_continue_without_a_pid_record_takes_the_first_that_grows(self):
        self.transcript("a", [line("a", "user_message_chunk", 2, content=text("a-old"))])
        self.transcript("b", [line("b", "user_message_chunk", 2, content=text("b-old"))])
        follower = self.follower(["--continue"])
        follower.poll(100)
        self.assertEqual(self.events, [])
        self.transcript("a", [line("a", "user_message_chunk", 3, content=text("a-new"))])
        follower.poll(100)
        self.transcript("b", [line("b", "user_message_chunk", 3, content=text("b-new"))])
        follower.poll(100)
        self.assertEqual((self.sessions(), self.said()), (["a"], ["a-new"]))

    def test_resume_in_the_tui_rebinds_once_to_the_transcript_that_appends(self):
        self.transcript("old", [line("old", "user_message_chunk", 2, content=text("old-1"))])
        follower = self.follower([])
        self.transcript("new-1", [line("new-1", "user_message_chunk", 2, content=text("one"))])
        follower.poll(100)
        self.active(("new-1", 100), ("busy", 200))
        self.transcript("busy", [line("busy", "user_message_chunk", 2, content=text("busy"))])
        follower.user_submitted("/resume")
        follower.poll(100)
        self.assertEqual(self.sessions(), ["new-1"])  # nothing appended yet: no switch
        # another terminal's session appends: not ours
        self.transcript("busy", [line("busy", "user_message_chunk", 3, content=text("busy-2"))])
        follower.user_submitted("")  # Enter in the picker
        follower.poll(100)
        self.assertEqual(self.sessions(), ["new-1"])
        self.transcript("old", [line("old", "user_message_chunk", 9, content=text("resumed"))])
        follower.poll(100)
        self.assertEqual(self.sessions(), ["new-1", "old"])
        self.assertEqual(self.said(), ["one", "resumed"])  # old-1 was history
        # only one re-bind: another session appending later is not followed
        self.transcript("new-1", [line("new-1", "user_message_chunk", 3, content=text("two"))])
        follower.poll(100)
        self.assertEqual((self.sessions(), self.said()), (["new-1", "old"], ["one", "resumed"]))

    def test_no_rebind_when_the_old_session_goes_on(self):
        self.transcript("old", [line("old", "user_message_chunk", 2, content=text("x"))])
        follower = self.follower([])
        self.transcript("new-1", [line("new-1", "user_message_chunk", 2, content=text("one"))])
        follower.poll(100)
        follower.user_submitted("/resume")  # then Esc in the picker, and a prompt
        self.transcript("new-1", [line("new-1", "user_message_chunk", 3, content=text("two"))])
        follower.poll(100)
        self.transcript("old", [line("old", "user_message_chunk", 3, content=text("y"))])
        follower.poll(100)
        self.assertEqual((self.sessions(), self.said()), (["new-1"], ["one", "two"]))

    def test_no_rebind_without_a_switch_command_or_after_the_window(self):
        follower = self.follower([])
        self.transcript("new-1", [line("new-1", "user_message_chunk", 2, content=text("one"))])
        follower.poll(100)
        self.transcript("x", [line("x", "user_message_chunk", 2, content=text("x"))])
        follower.poll(100)
        follower.user_submitted("/new")
        follower.switch = (follower.switch[0], time.monotonic() - 1, time.monotonic())
        self.transcript("y", [line("y", "user_message_chunk", 2, content=text("y"))])
        follower.poll(100)
        self.assertEqual(self.sessions(), ["new-1"])


class Keys(unittest.TestCase):
    def test_control_frames_are_stripped_across_chunks(self):
        keys = grok.InputLine()
        out1, _ = keys.feed(b"ab\x1eWU")
        out2, _ = keys.feed(b'JIE {"event":"handoff_decision"}')
        out3, lines = keys.feed(b"\ncd\r")
        self.assertEqual(out1 + out2 + out3, b"abcd\r")
        self.assertEqual(lines, ["abcd"])

    def test_a_submitted_line_ignores_escape_sequences_and_counts_edits(self):
        keys = grok.InputLine()
        _, lines = keys.feed(b"/resu\x1b[A\x1b[1;5Cmx\x7fe\r")
        self.assertEqual(lines, ["/resume"])
        out, lines = keys.feed(b"\x1b[200~a\nb\x1b[201~\r")
        self.assertEqual((out, lines), (b"\x1b[200~a\nb\x1b[201~\r", ["a b"]))
        _, lines = keys.feed(b"\x1b]11;rgb:0/0/0\x07x\r")  # a terminal reply is not typing
        self.assertEqual(lines, ["x"])


class IssueContext(unittest.TestCase):
    def serve(self, status, body):
        seen = {}

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                seen["path"], seen["auth"] = self.path, self.headers.get("Authorization")
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *_):
                pass

        server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        return f"http://127.0.0.1:{server.server_address[1]}", seen

    def run_rules(self, url):
        env = dict(os.environ, WUJIE_ISSUE_ID="issue-1", WUJIE_SERVER_URL=url,
                   WUJIE_TOKEN="secret-token-123")
        code = ("import importlib.machinery as m;"
                f"g = m.SourceFileLoader('g', {ADAPTER!r}).load_module();"
                "import json; print(json.dumps(g.issue_rules()))")
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                              text=True, timeout=30)
        return json.loads(done.stdout), done.stderr

    def test_the_issue_is_fetched_with_the_token_and_becomes_read_only_context(self):
        url, seen = self.serve(200, {
            "key": "WUJ-7", "title": "Add a cache", "status": "open",
            "description": "Cache the parsed manifests.",
            "comments": [{"author_kind": "user", "body": "LRU please"}]})
        rules, _ = self.run_rules(url)
        self.assertEqual(seen, {"path": "/api/v1/issues/issue-1",
                                "auth": "Bearer secret-token-123"})
        self.assertIn("WUJ-7", rules)
        self.assertIn("Add a cache", rules)
        self.assertIn("Cache the parsed manifests.", rules)
        self.assertIn("LRU please", rules)
        self.assertIn("read-only context", rules)

    def test_a_failed_fetch_says_so_and_never_prints_the_token(self):
        url, _ = self.serve(403, {"error": "forbidden"})
        rules, stderr = self.run_rules(url)
        self.assertIsNone(rules)
        self.assertIn("could not fetch issue issue-1", stderr)
        self.assertIn("403", stderr)
        self.assertNotIn("secret-token-123", stderr)


class Stopping(unittest.TestCase):
    """The adapter on a terminal of its own with a stand-in for grok that waits forever: grok
    runs in a session of its own (it owns the adapter's PTY), so stopping the adapter must
    reach it."""

    def start(self):
        tmp = tempfile.mkdtemp()
        self.addCleanup(lambda: subprocess.run(["rm", "-rf", tmp]))
        pidfile = os.path.join(tmp, "grok.pid")
        fake = os.path.join(tmp, "grok")
        with open(fake, "w") as f:
            f.write(f"#!{sys.executable}\nimport os, signal\n"
                    f"open({pidfile!r} + '.tmp', 'w').write(str(os.getpid()))\n"
                    f"os.replace({pidfile!r} + '.tmp', {pidfile!r})\n"
                    "while True:\n    signal.pause()\n")
        os.chmod(fake, 0o755)
        env = dict(os.environ, WUJIE_LOCALRUN_SESSION_ID="d-1", WUJIE_GROK_BIN=fake,
                   GROK_HOME=os.path.join(tmp, "grok-home"))
        env.pop("WUJIE_ISSUE_ID", None)
        pid, fd = pty.fork()
        if pid == 0:
            os.execve(sys.executable, [sys.executable, ADAPTER], env)
        self.addCleanup(os.close, fd)
        deadline = time.monotonic() + 30
        while not os.path.exists(pidfile):
            self.assertLess(time.monotonic(), deadline, "the stand-in grok did not start")
            time.sleep(0.05)
        with open(pidfile) as f:
            return pid, int(f.read())

    def exit_of(self, pid):
        deadline = time.monotonic() + 30
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return os.waitstatus_to_exitcode(status)
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                self.fail("the adapter did not exit")
            time.sleep(0.05)

    def assert_gone(self, pid):
        deadline = time.monotonic() + 30
        while os.path.exists(f"/proc/{pid}") and not zombie(pid):
            self.assertLess(time.monotonic(), deadline, f"grok (pid {pid}) is still running")
            time.sleep(0.05)

    def test_sigterm_reaches_grok_and_its_status_is_the_exit_status(self):
        adapter, grok_pid = self.start()
        os.kill(adapter, signal.SIGTERM)
        self.assertEqual(self.exit_of(adapter), 128 + signal.SIGTERM)
        self.assert_gone(grok_pid)

    def test_a_killed_adapter_hangs_up_grok_s_terminal(self):
        adapter, grok_pid = self.start()
        os.kill(adapter, signal.SIGKILL)
        self.exit_of(adapter)
        self.assert_gone(grok_pid)


def zombie(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


class Main(unittest.TestCase):
    def run_adapter(self, args, env):
        return subprocess.run([sys.executable, ADAPTER, *args], env=env, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=30)

    def test_refusals_exit_2_with_the_reason_and_print_no_event(self):
        env = dict(os.environ, WUJIE_LOCALRUN_SESSION_ID="d-1")
        done = self.run_adapter(["-p", "hi"], env)
        self.assertEqual(done.returncode, 2)
        self.assertEqual(done.stdout, "")
        self.assertIn("-p is not supported", done.stderr)

    def test_it_needs_a_run_or_a_discussion(self):
        env = {k: v for k, v in os.environ.items() if not k.startswith("WUJIE_")}
        done = self.run_adapter([], env)
        self.assertEqual(done.returncode, 2)
        self.assertIn("WUJIE_LOCALRUN_SESSION_ID", done.stderr)

    def test_a_missing_grok_is_named(self):
        env = dict(os.environ, WUJIE_LOCALRUN_SESSION_ID="d-1", PATH="/nonexistent")
        env.pop("WUJIE_GROK_BIN", None)
        done = self.run_adapter([], env)
        self.assertEqual(done.returncode, 127)
        self.assertIn("grok CLI was not found", done.stderr)


if __name__ == "__main__":
    unittest.main()
