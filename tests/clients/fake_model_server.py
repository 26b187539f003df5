#!/usr/bin/python3
"""A stand-in for Hugging Face on loopback, for `vkstream pull` tests (nothing reaches the internet).

Serves ROOT/OWNER/REPO/FILE at /OWNER/REPO/resolve/main/FILE (with Range support) and the listing
/api/models/OWNER/REPO like huggingface.co's ?blobs=true answer (siblings with lfs sha256 and size).
Test controls, as files beside FILE:
  FILE.fake-sha256  the listing advertises this digest instead of the real one (a corrupted download)
  FILE.cut-after    a request without Range gets the full Content-Length but only this many bytes,
                    then the connection closes (an interrupted transfer)
  FILE.delay-ms     the body goes out in 16 KiB pieces with this many milliseconds between them (a
                    download that takes a while)
Every request is appended to LOG as "METHOD PATH range=RANGE".
Usage: fake_model_server.py ROOT PORT_FILE LOG
"""
import hashlib
import http.server
import json
import os
import re
import sys
import time

ROOT, PORT_FILE, LOG = sys.argv[1], sys.argv[2], sys.argv[3]


def read_text(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send_json(self, status, obj):
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        with open(LOG, "a") as log:
            log.write("GET %s range=%s\n" % (self.path, self.headers.get("Range", "")))
        path = self.path.split("?")[0]
        m = re.fullmatch(r"/api/models/([\w.-]+)/([\w.-]+)", path)
        if m:
            return self.listing(m.group(1), m.group(2))
        m = re.fullmatch(r"/([\w.-]+)/([\w.-]+)/resolve/main/([\w.-]+)", path)
        if m:
            return self.download(os.path.join(ROOT, m.group(1), m.group(2), m.group(3)))
        self.send_json(404, {"error": "not found"})

    def listing(self, owner, repo):
        folder = os.path.join(ROOT, owner, repo)
        if not os.path.isdir(folder):
            return self.send_json(404, {"error": "Repository not found"})
        siblings = []
        for name in sorted(os.listdir(folder)):
            full = os.path.join(folder, name)
            if not name.endswith(".gguf"):
                siblings.append({"rfilename": name})
                continue
            with open(full, "rb") as f:
                digest = hashlib.sha256(f.read()).hexdigest()
            digest = read_text(full + ".fake-sha256") or digest
            size = os.path.getsize(full)
            siblings.append({"rfilename": name, "size": size, "lfs": {"sha256": digest, "size": size, "pointerSize": 134}})
        self.send_json(200, {"id": owner + "/" + repo, "siblings": siblings})

    def download(self, full):
        if not os.path.isfile(full):
            return self.send_json(404, {"error": "Entry not found"})
        with open(full, "rb") as f:
            data = f.read()
        start = 0
        rng = self.headers.get("Range")
        if rng:
            m = re.fullmatch(r"bytes=(\d+)-", rng)
            start = int(m.group(1)) if m else 0
            if start >= len(data):
                self.send_response(416)
                self.send_header("Content-Range", "bytes */%d" % len(data))
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(206)
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, len(data) - 1, len(data)))
        else:
            self.send_response(200)
        body = data[start:]
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        cut = read_text(full + ".cut-after")
        if cut is not None and not rng:
            self.wfile.write(body[: int(cut)])
            self.wfile.flush()
            self.close_connection = True
            return
        delay = read_text(full + ".delay-ms")
        if delay is None:
            self.wfile.write(body)
            return
        for i in range(0, len(body), 16384):
            self.wfile.write(body[i : i + 16384])
            self.wfile.flush()
            time.sleep(int(delay) / 1000.0)


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(PORT_FILE + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.rename(PORT_FILE + ".tmp", PORT_FILE)
server.serve_forever()
