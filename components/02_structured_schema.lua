-- Simple tools: the input schema is built from argument declarations, and
-- object blocks nest (seed: "Snodo.Tool.Simple builds the input schema").
local snodo = require "snodo"
local tool, argument = snodo.tool, snodo.argument

tool "search" {
  title = "Search packages",
  description = "Search packages",
  additional_properties = false,
  icons = { { src = "https://example.com/search.png", mimeType = "image/png" } },
  metadata = { ["com.example/search"] = { category = "catalog" } },
  argument "query" { "string", required = true, min_length = 1 },
  argument "page"  { "integer", minimum = 1 },
  argument "tags"  { snodo.array "string", unique_items = true },
  call = function(args, ctx)
    return ("searching for %s on page %d"):format(args.query, args.page or 1)
  end,
}

tool "order" {
  description = "Place an order",
  argument "customer" { "object", required = true,
    argument "id"    { "string", required = true },
    argument "email" { "string" },
  },
  argument "lines" { snodo.array "object", required = true, min_items = 1,
                     additional_properties = false,
    argument "sku"      { "string", required = true },
    argument "quantity" { "integer", required = true, minimum = 1 },
  },
  output_schema = {
    argument "order_id" { "string", required = true },
    argument "total"    { "number", required = true },
  },
  call = function(args, ctx)
    return snodo.structured { order_id = "o-1", total = 12.5 }
  end,
}
