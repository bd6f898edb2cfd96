// Overlay geometry (text, panels, bars) in window pixels, origin at the top left.
#version 330 core

layout(location = 0) in vec2 a_pos;   // pixels
layout(location = 1) in vec4 a_color; // normalised bytes
uniform vec2 u_viewport;              // viewport size in pixels
out vec4 v_color;

void main() {
  vec2 ndc = vec2(a_pos.x / u_viewport.x * 2.0 - 1.0, 1.0 - a_pos.y / u_viewport.y * 2.0);
  gl_Position = vec4(ndc, 0.0, 1.0);
  v_color = a_color;
}
