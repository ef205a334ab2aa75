// Preloaded with `node --require` in front of the MCP reference server, which calls
// `app.listen(PORT)` and so would bind every interface: the tests only use loopback,
// so a listen call without a host is pinned to 127.0.0.1.
"use strict";
const net = require("net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === "number" || typeof args[0] === "string") {
    if (typeof args[1] !== "string") {
      args.splice(1, 0, "127.0.0.1");
    }
  }
  return listen.apply(this, args);
};
