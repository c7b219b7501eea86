-- Shared by the specs: paths and a loader for the bundled components.
local M = {}

M.root = (debug.getinfo(1, "S").source:match("^@(.*)/spec/support%.lua$")) or "."
M.components = M.root .. "/components"

local testing = require "snodo.testing"

--- The bundled components, loaded fresh.
function M.components_server()
  return testing.load(M.components)
end

--- Writes files into a new temporary directory and returns its path.
function M.temp_server(files)
  local dir = os.tmpname()
  os.remove(dir)
  assert(os.execute("mkdir -p '" .. dir .. "'"))
  for name, text in pairs(files) do
    local f = assert(io.open(dir .. "/" .. name, "w"))
    f:write(text)
    f:close()
  end
  return dir
end

function M.remove(dir)
  os.execute("rm -rf '" .. dir .. "'")
end

M.MODERN = { protocol = "2026-07-28" }

return M
