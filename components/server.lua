-- The bundled example server: each numbered file mirrors one example of the
-- seed documents. server.lua configures the server and may declare
-- components inline too; the forms mix freely.
local snodo = require "snodo"

snodo.server {
  name = "snodo-examples",
  version = "0.1.0",
  title = "Snodo examples",
  instructions = "Example tools, resources and prompts bundled with Snodo.",
  pagination = { page_size = 50 },
  tools_cache = { ttl_ms = 60000, scope = "public" },
}

-- An inline component in server.lua itself.
snodo.tool "echo" {
  description = "Echo the text back",
  snodo.argument "text" { "string", required = true },
  call = function(args) return "echo: " .. args.text end,
}
