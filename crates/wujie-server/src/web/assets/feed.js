// One live connection for every issue page of this browser: a browser opens at most six
// HTTP/1.1 connections to a host, and a feed per tab would hold them all. Runs as a shared
// worker (one per browser and server); where there is none, as a dedicated worker per page.
//
// Pages post {follow: KEY, after: POSITION} when they load and {leave: KEY} when they go. The
// worker follows /live?issues=KEY@POSITION,… and hands each page its issue's events
// ({type, data}), plus 'open' and 'error' for the connection. Each event carries its issue's
// position, so when the set of issues changes or the connection drops, the connection is
// reopened from where each issue was: nothing missed.
'use strict';

var EVENTS = ['live', 'message', 'run', 'code', 'comment', 'status', 'edited', 'row', 'reload', 'ended', 'noop'];
var feeds = {}; // issue key -> {at: 'message.activity' or '', live: bool, ports: Set}
var ports = new Set();
var source = null;
var reopening = null;
var failures = 0;

function post(port, message) {
  try {
    port.postMessage(message);
  } catch (e) {
    // A page that went without saying so.
    ports.delete(port);
  }
}

function broadcast(message) {
  ports.forEach(function (port) { post(port, message); });
}

// The earlier of two positions, part by part: a page that rendered before the worker's
// position gets what came since (pages skip what they already show).
function earlier(a, b) {
  if (!a || !b) return '';
  var x = a.split('.'), y = b.split('.');
  return Math.min(+x[0], +y[0]) + '.' + Math.min(+x[1], +y[1]);
}

function reopenSoon(delay) {
  if (reopening !== null) return;
  // Pages opened together share the first reopen.
  reopening = setTimeout(reopen, delay);
}

function reopen() {
  reopening = null;
  if (source) source.close();
  source = null;
  var keys = Object.keys(feeds);
  if (!keys.length) return;
  var list = keys.map(function (key) {
    feeds[key].live = false;
    return feeds[key].at ? key + '@' + feeds[key].at : key;
  });
  var es = new EventSource('/live?issues=' + encodeURIComponent(list.join(',')));
  source = es;
  es.addEventListener('open', function () {
    failures = 0;
    broadcast({type: 'open'});
  });
  // A lost connection (the server restarting) is reopened from each issue's position, later
  // and later while it keeps failing.
  es.addEventListener('error', function () {
    if (source !== es) return;
    es.close();
    source = null;
    broadcast({type: 'error'});
    failures += 1;
    reopenSoon(Math.min(500 * failures, 5000));
  });
  EVENTS.forEach(function (type) {
    es.addEventListener(type, function (e) {
      var data = JSON.parse(e.data);
      var feed = feeds[data.issue];
      if (!feed) return;
      if (data.at) feed.at = data.at;
      if (type === 'live') feed.live = true;
      feed.ports.forEach(function (port) { post(port, {type: type, data: data}); });
      // The session ended: this issue is followed no more until its page is loaded again.
      if (type === 'ended') delete feeds[data.issue];
    });
  });
}

function attach(port) {
  ports.add(port);
  port.onmessage = function (e) {
    var m = e.data;
    if (m.follow) {
      var feed = feeds[m.follow];
      if (!feed) {
        feeds[m.follow] = {at: m.after || '', live: false, ports: new Set([port])};
        reopenSoon(50);
        return;
      }
      feed.ports.add(port);
      var at = earlier(feed.at, m.after);
      if (at !== feed.at) {
        feed.at = at;
        reopenSoon(50);
      } else if (feed.live && source && source.readyState === EventSource.OPEN) {
        post(port, {type: 'open'});
        post(port, {type: 'live', data: {issue: m.follow}});
      }
    } else if (m.leave) {
      ports.delete(port);
      var left = feeds[m.leave];
      if (!left) return;
      left.ports.delete(port);
      if (!left.ports.size) {
        delete feeds[m.leave];
        reopenSoon(1000);
      }
    }
  };
}

if (typeof SharedWorkerGlobalScope !== 'undefined' && self instanceof SharedWorkerGlobalScope) {
  self.onconnect = function (e) { attach(e.ports[0]); };
} else {
  attach(self);
}
