-- wrk script: counts response statuses and prints "STATUS <code> <count>" lines at the end.
counts = {} -- global: done() reads it from each thread with thread:get
local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function response(status, headers, body)
  counts[status] = (counts[status] or 0) + 1
end

function done(summary, latency, requests)
  local total = {}
  for _, t in ipairs(threads) do
    for status, n in pairs(t:get("counts") or {}) do
      total[status] = (total[status] or 0) + n
    end
  end
  for status, n in pairs(total) do
    io.write(string.format("STATUS %d %d\n", status, n))
  end
end
