// The dashboard's files, under daemon/http/assets/ and compiled into the
// binary (cmake/embed_files.cmake), never read from disk: an installed
// clusterd has no source tree. They load nothing from elsewhere, so the
// dashboard works offline.
//   dashboard.html  the one document, served for every page (/, /node,
//                   /jobs, /job, /sweeps, /sweep, /store); it loads the rest
//   /assets/dashboard.css   the style
//   /assets/common.js       elements, the API, formats (numbers, bytes, times)
//   /assets/chart.js        the one line chart every chart is
//   /assets/usage.js        use over time: a node, the cluster, a job's nodes
//   /assets/job.js          the jobs page and a job's page
//   /assets/sweep.js        the sweeps page and a sweep's page
//   /assets/dashboard.js    the cluster and store pages; draws the page its
//                           path names, and refreshes it every 2 s
// The scripts are plain ones loaded in that order, sharing their top-level
// names; they draw from the JSON API (same origin, the token in an HttpOnly
// cookie). Every string the
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
