-- wrk script for bench/run_core.py: each connection is one scraper asking for gzip (as
-- Prometheus does) every 10 ms, 100 times a second: 100x a 1 s scrape interval, yet paced, so
-- wrk measures the daemon's latency rather than a saturated machine's run queue.
wrk.headers["Accept-Encoding"] = "gzip"

function delay()
  return 10
end
