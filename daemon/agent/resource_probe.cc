// placeholder, replaced by the resource probe
