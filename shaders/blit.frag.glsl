// Shows the rendered frame. The renderer's row 0 is the top row, OpenGL's is the bottom one,
// hence the flip. Texture coordinates come from the fragment's pixel centre, so that with a
// texture of the viewport's size and nearest filtering every pixel is copied exactly.
#version 330 core

uniform sampler2D u_image;
uniform vec2 u_viewport; // viewport size in pixels
out vec4 o_color;

void main() {
  vec2 uv = gl_FragCoord.xy / u_viewport;
  o_color = vec4(texture(u_image, vec2(uv.x, 1.0 - uv.y)).rgb, 1.0);
}
