-- Completion: prompts and resource templates opt in with
-- completion_arguments and complete(c, ctx) (seed "Completion").
local snodo = require "snodo"
local argument = snodo.argument

local packages = { "jason", "plug", "phoenix", "phoenix_live_view", "postgrex" }

local function starting_with(prefix)
  local out = {}
  for _, name in ipairs(packages) do
    if name:sub(1, #prefix) == prefix then out[#out + 1] = name end
  end
  return out
end

snodo.prompt "lookup" {
  completion_arguments = { "name" },
  argument "name" { required = true },
  complete = function(c, ctx)
    local matches = starting_with(c.value)
    return snodo.completion(matches, { total = #matches, has_more = false })
  end,
  render = function(args) return ("Look up %s."):format(args.name) end,
}

snodo.resource "package_docs" {
  uri_template = "hex://{name}/docs{/page*}",
  mime_type = "text/plain",
  completion_arguments = { "name" },
  complete = function(c) return starting_with(c.value) end, -- a plain list works too
  read = function(params)
    return ("docs of %s, page %s"):format(params.name, params.page or "index")
  end,
}
