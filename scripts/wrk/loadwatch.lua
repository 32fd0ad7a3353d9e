-- loadwatch.lua: writes wrk's run summary where loadwatch's textfile collector reads it.
--
-- Usage:
--   LOADWATCH_TEXTFILE_DIR=/var/lib/loadwatch/textfile LOADWATCH_WRK_RUN=checkout \
--     wrk -t2 -c50 -d60s -s scripts/wrk/loadwatch.lua http://127.0.0.1:3000/
--   loadwatch --collector.textfile.directory=/var/lib/loadwatch/textfile
--
-- When wrk finishes, done() writes <dir>/wrk_<run>.prom in the Prometheus text format,
-- atomically (a hidden temporary file in the same directory, then rename), so loadwatch never
-- reads half a file. Each run replaces the file of the same run name.
--   LOADWATCH_TEXTFILE_DIR  directory (default /var/lib/loadwatch/textfile); must exist
--   LOADWATCH_WRK_RUN       value of the `run` label (default "wrk"); also names the file
--
-- Metrics (all labelled run="<run>"; times in seconds, as wrk measured them):
--   loadwatch_wrk_requests_total                  requests completed (wrk's "N requests")
--   loadwatch_wrk_errors_total{kind}              connect, read, write, status (non-2xx/3xx),
--                                                 timeout (wrk's "Socket errors" / "Non-2xx");
--                                                 read includes closes after complete responses
--                                                 that lacked "Connection: close" (docs/soak.md)
--   loadwatch_wrk_read_bytes_total                bytes read (wrk's "N MB read")
--   loadwatch_wrk_duration_seconds                run duration
--   loadwatch_wrk_requests_per_second             requests / duration (wrk's "Requests/sec")
--   loadwatch_wrk_latency_seconds{quantile}       0.5, 0.9, 0.99, 0.999
--   loadwatch_wrk_latency_{mean,max,stdev}_seconds
--   loadwatch_wrk_last_run_timestamp_seconds      unix time the summary was written
--
-- With a script of your own: dofile() this one from yours and call
-- loadwatch_done(summary, latency, requests) from your done(); it only sets done() itself when
-- no done() is defined yet.

local function label_value(s)
  return (s:gsub("\\", "\\\\"):gsub("\n", "\\n"):gsub('"', '\\"'))
end

local function count(n) return string.format("%d", math.floor(n)) end
local function seconds_from_us(us) return string.format("%.9g", us / 1e6) end

function loadwatch_done(summary, latency, requests)
  local dir = os.getenv("LOADWATCH_TEXTFILE_DIR") or "/var/lib/loadwatch/textfile"
  local run = os.getenv("LOADWATCH_WRK_RUN") or "wrk"
  local file_part = run:gsub("[^%w_.-]", "_")
  local final = dir .. "/wrk_" .. file_part .. ".prom"
  -- Hidden and not ending in .prom: the collector never picks up the temporary file.
  local tmp = dir .. "/.wrk_" .. file_part .. ".prom.tmp"

  local run_label = 'run="' .. label_value(run) .. '"'
  local lines = {}
  local function family(name, kind, help)
    lines[#lines + 1] = "# HELP " .. name .. " " .. help
    if kind then lines[#lines + 1] = "# TYPE " .. name .. " " .. kind end
  end
  local function sample(name, extra, value)
    local labels = run_label
    if extra then labels = labels .. "," .. extra end
    lines[#lines + 1] = name .. "{" .. labels .. "} " .. value
  end

  local duration_s = summary.duration / 1e6
  family("loadwatch_wrk_requests_total", "counter", "Requests wrk completed in the run.")
  sample("loadwatch_wrk_requests_total", nil, count(summary.requests))
  family("loadwatch_wrk_errors_total", "counter",
         "Socket errors and non-2xx/3xx responses wrk counted in the run, by kind; read also "
         .. "counts each connection a server closed after a complete response without saying "
         .. "Connection: close (without keep-alive, one per request).")
  for _, kind in ipairs({"connect", "read", "write", "status", "timeout"}) do
    sample("loadwatch_wrk_errors_total", 'kind="' .. kind .. '"', count(summary.errors[kind]))
  end
  family("loadwatch_wrk_read_bytes_total", "counter", "Bytes wrk read in the run.")
  sample("loadwatch_wrk_read_bytes_total", nil, count(summary.bytes))
  family("loadwatch_wrk_duration_seconds", "gauge", "Duration of the run.")
  sample("loadwatch_wrk_duration_seconds", nil, string.format("%.9g", duration_s))
  family("loadwatch_wrk_requests_per_second", "gauge",
         "Requests per second over the run, as wrk reports it.")
  sample("loadwatch_wrk_requests_per_second", nil,
         string.format("%.9g", duration_s > 0 and summary.requests / duration_s or 0))
  -- Untyped on purpose: a gauge with a quantile label fails `promtool check metrics`, and
  -- wrk gives no count/sum of its own for a summary.
  family("loadwatch_wrk_latency_seconds", nil, "Latency quantiles of the run.")
  for _, q in ipairs({{"0.5", 50}, {"0.9", 90}, {"0.99", 99}, {"0.999", 99.9}}) do
    sample("loadwatch_wrk_latency_seconds", 'quantile="' .. q[1] .. '"',
           seconds_from_us(latency:percentile(q[2])))
  end
  family("loadwatch_wrk_latency_mean_seconds", "gauge", "Mean latency of the run.")
  sample("loadwatch_wrk_latency_mean_seconds", nil, seconds_from_us(latency.mean))
  family("loadwatch_wrk_latency_max_seconds", "gauge", "Highest latency of the run.")
  sample("loadwatch_wrk_latency_max_seconds", nil, seconds_from_us(latency.max))
  family("loadwatch_wrk_latency_stdev_seconds", "gauge", "Standard deviation of the latency.")
  sample("loadwatch_wrk_latency_stdev_seconds", nil, seconds_from_us(latency.stdev))
  family("loadwatch_wrk_last_run_timestamp_seconds", "gauge",
         "Unix time wrk wrote this summary.")
  sample("loadwatch_wrk_last_run_timestamp_seconds", nil, string.format("%d", os.time()))

  local f, err = io.open(tmp, "w")
  if not f then
    io.stderr:write("loadwatch.lua: cannot write " .. tmp .. ": " .. tostring(err) .. "\n")
    return
  end
  f:write(table.concat(lines, "\n"), "\n")
  f:close()
  local ok, rename_err = os.rename(tmp, final)
  if not ok then
    io.stderr:write("loadwatch.lua: cannot rename to " .. final .. ": " .. tostring(rename_err) .. "\n")
    os.remove(tmp)
    return
  end
  io.stderr:write("loadwatch.lua: wrote " .. final .. "\n")
end

if done == nil then done = loadwatch_done end
