#!/usr/bin/env node
// Sidecar for the ZCode CLI (reference implementation, measured against zcode 0.16.9).
// Speaks the Wujie sidecar contract: JSON-RPC 2.0, one JSON per line on stdin/stdout;
// methods ping, prompt, state, close. Everything else goes to stderr (Wujie logs it).
//
// One ZCode turn per prompt:
//   zcode.cjs --prompt <text> --output-format stream-json --cwd <dir> --mode <mode> [--resume <sess_id>]
// The last stdout line is {type:"result", sessionId, response}.
import { spawn } from "node:child_process";
import { appendFileSync, existsSync, readFileSync, statSync } from "node:fs";
import { delimiter, join } from "node:path";
import { createInterface } from "node:readline";

function parseArgs(argv) {
  const out = {};
  for (let i = 0; i < argv.length; i++) {
    const key = argv[i];
    if (!key.startsWith("--")) throw new Error(`unexpected argument ${key}`);
    out[key.slice(2)] = argv[++i] ?? "";
  }
  return out;
}

const args = parseArgs(process.argv.slice(2));
const workdir = args.workdir || process.cwd();
const mode = args.mode || "guarded"; // ZCode's own default is yolo: every permission bypassed.

// Two different ids. The label (br-<project>-<branch>) is only ever reported back; ZCode answers
// "Session not found" if asked to resume it. Only the real sess_… id from a result line resumes.
const desiredSessionId = args["session-id"] || process.env.WUJIE_SESSION_LABEL || "";
let zcodeSessionId = process.env.WUJIE_RESUME_SESSION_ID || "";

const sessionDir = process.env.WUJIE_SESSION_DIR || "";
const transcript = sessionDir ? join(sessionDir, "messages.jsonl") : "";

function log(...parts) {
  process.stderr.write(`[zcode-sidecar] ${parts.join(" ")}\n`);
}

function isFile(path) {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

// The declared cliPath may point at a file that is not there (the 28 MB CLI is not shipped).
// Check declared and discovered locations alike, and say where we looked and what to change,
// instead of letting node fail later with a MODULE_NOT_FOUND stack.
function findCli() {
  const looked = [];
  const candidates = [];
  if (process.env.WUJIE_CLI_PATH) {
    candidates.push([process.env.WUJIE_CLI_PATH, `cliPath in ${process.env.WUJIE_DRIVER_FILE || "driver.json"}`]);
  }
  if (process.env.ZCODE_CLI) candidates.push([process.env.ZCODE_CLI, "environment variable ZCODE_CLI"]);
  for (const dir of (process.env.PATH || "").split(delimiter).filter(Boolean)) {
    candidates.push([join(dir, "zcode.cjs"), "PATH"]);
  }
  for (const [path, source] of candidates) {
    if (isFile(path)) return path;
    looked.push(`  - ${path} (${source}): missing`);
  }
  throw new Error(
    "ZCode CLI (zcode.cjs) not found. Looked at:\n" + looked.join("\n") +
      "\nFix: edit cliPath in <data dir>/commondev/runtime/zcode/driver.json to point at your zcode.cjs" +
      " (copy the bundled driver.json there first), or set ZCODE_CLI."
  );
}

let running = null; // the ZCode child of the current prompt

function runTurn(cli, text) {
  const argv = [cli, "--prompt", text, "--output-format", "stream-json", "--cwd", workdir, "--mode", mode];
  if (zcodeSessionId) argv.push("--resume", zcodeSessionId); // never on the first turn
  return new Promise((resolve, reject) => {
    // Not detached: the child stays in the sidecar's process group, which Wujie kills as a
    // whole on timeout, so ZCode's tool subprocesses cannot outlive it.
    const child = spawn(process.execPath, argv, { cwd: workdir, stdio: ["ignore", "pipe", "pipe"] });
    running = child;
    let out = "";
    let err = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => {
      err += d;
      process.stderr.write(d);
    });
    child.on("error", reject);
    child.on("close", (code) => {
      running = null;
      let result = null;
      for (const line of out.split("\n")) {
        try {
          const event = JSON.parse(line);
          if (event && event.type === "result") result = event;
        } catch {
          // intermediate non-JSON output is ignored; the result line is what counts
        }
      }
      if (!result) {
        reject(new Error(`zcode exited with ${code} without a {type:"result"} line: ${err.trim().slice(-500)}`));
      } else {
        resolve(result);
      }
    });
  });
}

function remember(entry) {
  if (transcript) appendFileSync(transcript, JSON.stringify(entry) + "\n");
}

function messages() {
  if (!transcript || !existsSync(transcript)) return [];
  return readFileSync(transcript, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
}

const reported = () => zcodeSessionId || desiredSessionId || null;

const methods = {
  async ping() {
    findCli();
    return { ok: true, session_id: reported() };
  },
  async prompt(params) {
    // params.session_id is the label too: it must never become the resume target.
    const text = String(params?.text ?? "");
    const result = await runTurn(findCli(), text);
    if (typeof result.sessionId === "string" && result.sessionId) zcodeSessionId = result.sessionId;
    const reply = String(result.response ?? "");
    remember({ role: "user", text });
    remember({ role: "assistant", text: reply });
    return { ok: true, session_id: reported(), reply };
  },
  async state() {
    return { ok: true, session_id: reported(), messages: messages() };
  },
  async close() {
    if (running) running.kill("SIGTERM");
    setImmediate(() => process.exit(0));
    return { ok: true };
  },
};

function send(message) {
  process.stdout.write(JSON.stringify({ jsonrpc: "2.0", ...message }) + "\n");
}

const rl = createInterface({ input: process.stdin });
rl.on("line", async (line) => {
  if (!line.trim()) return;
  let request;
  try {
    request = JSON.parse(line);
  } catch {
    return send({ id: null, error: { code: -32700, message: "parse error" } });
  }
  const method = methods[request.method];
  if (!method) return send({ id: request.id, error: { code: -32601, message: `unknown method ${request.method}` } });
  try {
    send({ id: request.id, result: await method(request.params) });
  } catch (e) {
    log(e.stack || e.message);
    send({ id: request.id, error: { code: -32000, message: e.message } });
  }
});
rl.on("close", () => {
  if (running) running.kill("SIGTERM");
  process.exit(0);
});
