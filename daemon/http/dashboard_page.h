// The dashboard's files, under daemon/http/assets/ and compiled into the
// binary (cmake/embed_files.cmake), never read from disk: an installed
// clusterd has no source tree. They load nothing from elsewhere, so the
// dashboard works offline.
//   dashboard.html  the one document, served for every page (/, /jobs,
//                   /job, /sweeps, /sweep, /store); it loads the two below
//   /assets/dashboard.css, /assets/dashboard.js
// The script draws the page its path names from the JSON API (same origin,
// the token in an HttpOnly cookie) and refreshes every 2 s. Every string the
// daemon gives (node, job, resource and metric names, reasons, logs) goes
// into the page as text (text nodes, textContent; SVG made with
// createElementNS), never as markup, so a name cannot run script.
#pragma once

#include <string_view>

namespace clusterd {

struct DashboardAsset {
  std::string_view content_type;
  std::string_view bytes;
};

// The document every page is.
std::string_view DashboardDocument();

// Whether `path` is where the dashboard's assets are served (/assets/...),
// whether or not one exists there.
bool IsDashboardAssetPath(std::string_view path);

// The asset served at `path`, or nullptr when there is none.
const DashboardAsset* FindDashboardAsset(std::string_view path);

}  // namespace clusterd
