#!/usr/bin/env node
// Sidecar for pi (@mariozechner/pi-coding-agent), bundled with Wujie. Plain Node, no deps.
// Wraps one long-lived `pi --mode rpc` process behind the Wujie sidecar contract:
// JSON-RPC 2.0 on stdin/stdout, one JSON per line; methods ping, prompt, state, close.
//
// What Wujie provides (see crates/wujie-commondev/src/runtime.rs):
//   WUJIE_LLM_DIR            pi's models.json/auth.json/settings.json, written by Wujie
//                            (llmConfig "pi"); used as PI_CODING_AGENT_DIR so the user's
//                            ~/.pi is never read or written
//   WUJIE_SESSION_DIR        where pi keeps this branch's session files (--session-dir)
//   WUJIE_RESUME_SESSION_ID  pi's real session id, once known: resumed with --session
//   WUJIE_CLI_PATH           the driver's declared cliPath, if any
// pi is found at: WUJIE_CLI_PATH, then WUJIE_PI_CLI, then `pi` on PATH.
import { spawn } from "node:child_process";
import { readFileSync, realpathSync, statSync } from "node:fs";
import { delimiter, dirname, join } from "node:path";
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
const label = args["session-id"] || process.env.WUJIE_SESSION_LABEL || "";
const resumeId = process.env.WUJIE_RESUME_SESSION_ID || "";

const log = (...parts) => process.stderr.write(`[pi-sidecar] ${parts.join(" ")}\n`);

function isFile(path) {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

function findPi() {
  const candidates = [];
  if (process.env.WUJIE_CLI_PATH) {
    candidates.push([process.env.WUJIE_CLI_PATH, `cliPath in ${process.env.WUJIE_DRIVER_FILE || "driver.json"}`]);
  }
  if (process.env.WUJIE_PI_CLI) candidates.push([process.env.WUJIE_PI_CLI, "environment variable WUJIE_PI_CLI"]);
  for (const dir of (process.env.PATH || "").split(delimiter).filter(Boolean)) candidates.push([join(dir, "pi"), "PATH"]);
  const looked = [];
  for (const [path, source] of candidates) {
    if (isFile(path)) return path;
    looked.push(`  - ${path} (${source}): missing`);
  }
  throw new Error(
    "pi executable not found. Looked at:\n" + looked.join("\n") +
      "\nFix: install pi (npm package @mariozechner/pi-coding-agent) so `pi` is on PATH, set WUJIE_PI_CLI," +
      " or set cliPath in <data dir>/commondev/runtime/pi/driver.json."
  );
}

// The provider/model Wujie wrote: pi is told to use exactly that one.
function modelSelection() {
  const dir = process.env.WUJIE_LLM_DIR;
  if (!dir) return [];
  const models = JSON.parse(readFileSync(join(dir, "models.json"), "utf8"));
  const [provider, config] = Object.entries(models.providers || {})[0] || [];
  const model = config?.models?.[0]?.id;
  return provider && model ? ["--provider", provider, "--model", model] : [];
}

let pi = null;
let piVersion = null;
let nextId = 1;
const pending = new Map(); // pi command id -> {resolve, reject}
let turnWaiter = null; // resolves on agent_end

function startPi() {
  const exe = findPi();
  const argv = ["--mode", "rpc", ...modelSelection()];
  if (process.env.WUJIE_SESSION_DIR) argv.push("--session-dir", process.env.WUJIE_SESSION_DIR);
  if (resumeId) argv.push("--session", resumeId); // only ever the real id, never the label
  const env = { ...process.env, PI_OFFLINE: process.env.PI_OFFLINE || "1" };
  if (process.env.WUJIE_LLM_DIR) env.PI_CODING_AGENT_DIR = process.env.WUJIE_LLM_DIR;
  log(`starting ${exe} ${argv.join(" ")}`);
  // Same process group as this sidecar: Wujie kills the group, pi's tools included.
  pi = spawn(exe, argv, { cwd: workdir, env, stdio: ["pipe", "pipe", "pipe"] });
  pi.stderr.on("data", (d) => process.stderr.write(d));
  pi.on("exit", (code, signal) => {
    log(`pi exited (${code ?? signal})`);
    const error = new Error(`pi exited (${code ?? signal}); see the sidecar log`);
    for (const { reject } of pending.values()) reject(error);
    pending.clear();
    if (turnWaiter) turnWaiter.reject(error);
    pi = null;
  });
  createInterface({ input: pi.stdout }).on("line", (line) => {
    let event;
    try {
      event = JSON.parse(line);
    } catch {
      return log(`pi wrote non-JSON: ${line.slice(0, 200)}`);
    }
    if (event.type === "response" && event.id && pending.has(event.id)) {
      const { resolve, reject } = pending.get(event.id);
      pending.delete(event.id);
      if (event.success) resolve(event.data);
      else reject(new Error(`pi ${event.command} failed: ${event.error}`));
    } else if (event.type === "agent_end" && turnWaiter) {
      const waiter = turnWaiter;
      turnWaiter = null;
      waiter.resolve(event);
    }
  });
}

function command(type, fields = {}) {
  if (!pi) throw new Error("pi is not running");
  const id = `w${nextId++}`;
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject });
    pi.stdin.write(JSON.stringify({ id, type, ...fields }) + "\n");
  });
}

// pi's id is only reported once the session has content (or was resumed): before that, pi has
// no session file to resume, so the label is reported instead and Wujie keeps waiting.
async function sessionId() {
  const state = await command("get_state");
  if (resumeId || state.messageCount > 0) return state.sessionId || label || null;
  return label || null;
}

// The version from pi's package.json, found by walking up from the resolved executable.
function piVersionOf(exe) {
  try {
    let dir = dirname(realpathSync(exe));
    for (let i = 0; i < 4; i++, dir = dirname(dir)) {
      const pkg = join(dir, "package.json");
      if (isFile(pkg)) {
        const meta = JSON.parse(readFileSync(pkg, "utf8"));
        if (meta.name === "@mariozechner/pi-coding-agent") return meta.version;
      }
    }
  } catch {
    // no version is fine: it is optional in the contract
  }
  return null;
}

const methods = {
  async ping() {
    if (!pi) {
      startPi();
      piVersion = piVersionOf(findPi());
    }
    const id = await sessionId();
    if (resumeId && id !== resumeId) log(`asked to resume ${resumeId} but pi is on ${id}`);
    return { ok: true, session_id: id, cli_version: piVersion || undefined };
  },
  async prompt(params) {
    if (!pi) startPi();
    const done = new Promise((resolve, reject) => (turnWaiter = { resolve, reject }));
    await command("prompt", { message: String(params?.text ?? "") });
    const end = await done;
    // A failed model call still ends the turn; surface it instead of an empty reply.
    const last = (end.messages || []).filter((m) => m.role === "assistant").pop();
    if (last && (last.stopReason === "error" || last.stopReason === "aborted")) {
      throw new Error(`pi turn ended with ${last.stopReason}: ${last.errorMessage || "no message"}`);
    }
    const text = await command("get_last_assistant_text");
    const reply = typeof text === "string" ? text : text?.text ?? "";
    return { ok: true, session_id: await sessionId(), reply };
  },
  async state() {
    if (!pi) startPi();
    const { messages } = await command("get_messages");
    return { ok: true, session_id: await sessionId(), messages };
  },
  async close() {
    if (pi) pi.kill("SIGTERM");
    setImmediate(() => process.exit(0));
    return { ok: true };
  },
};

const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", ...message }) + "\n");

createInterface({ input: process.stdin })
  .on("line", async (line) => {
    if (!line.trim()) return;
    let request;
    try {
      request = JSON.parse(line);
    } catch {
      return log(`ignoring a line that is not JSON: ${line.slice(0, 200)}`);
    }
    const method = methods[request.method];
    if (!method) return send({ id: request.id, error: { code: -32601, message: `unknown method ${request.method}` } });
    try {
      send({ id: request.id, result: await method(request.params) });
    } catch (e) {
      log(e.stack || e.message);
      send({ id: request.id, error: { code: -32000, message: e.message } });
    }
  })
  .on("close", () => {
    if (pi) pi.kill("SIGTERM");
    process.exit(0);
  });
