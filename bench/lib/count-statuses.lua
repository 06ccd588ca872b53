-- wrk script: response statuses are counted and printed as "STATUS <code> <count>"
-- lines at the end. Given a header name and a file with one value per line, every
-- request also carries the next value (cycling) of that header.
--   wrk -s count-statuses.lua <url> [-- <header name> <values file>]

local name, values, i = nil, {}, 0
counts = {} -- global: done() reads it from each thread with thread:get
local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  if args[1] == nil then return end
  name = args[1]
  for line in io.lines(args[2]) do
    values[#values + 1] = line
  end
  -- Only a rotating run replaces wrk's default request.
  request = function()
    i = i % #values + 1
    return wrk.format(nil, nil, { [name] = values[i] })
  end
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
