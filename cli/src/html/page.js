(function(){
function all(s,r){return Array.prototype.slice.call((r||document).querySelectorAll(s));}
all('input[name=heat]').forEach(function(i){i.addEventListener('change',function(){
 all('.heat').forEach(function(g){g.classList.toggle('off',g.getAttribute('data-heat')!==i.value);});
 all('.heat-legend').forEach(function(g){g.classList.toggle('off',g.getAttribute('data-legend')!==i.value);});});});
all('[data-finding]').forEach(function(a){a.addEventListener('click',function(ev){ev.preventDefault();
 var f=a.getAttribute('data-finding');var on=!a.classList.contains('sel');
 all('[data-finding]').forEach(function(b){b.classList.remove('sel');});
 all('svg.topo').forEach(function(s){s.classList.toggle('focus',on);});
 all('.ov').forEach(function(g){g.classList.toggle('on',on&&g.getAttribute('data-f')===f);});
 if(on){a.classList.add('sel');var t=document.getElementById('topology');if(t){t.scrollIntoView();}}});});
function openHash(){var h=location.hash.slice(1);if(!h){return;}
 var m=/^step-(\d+)$/.exec(h);var s=m&&document.querySelector('.step[data-step='+JSON.stringify(m[1])+']');if(s&&!s.classList.contains('sel')){s.click();}
 m=/^finding-(\d+)$/.exec(h);var a=m&&document.querySelector('[data-finding='+JSON.stringify(m[1])+']');if(a&&!a.classList.contains('sel')){a.click();}
 var d=document.getElementById(h);if(d&&d.tagName==='DETAILS'){d.open=true;}}
all('.step').forEach(function(s){s.addEventListener('click',function(){
 var on=!s.classList.contains('sel');all('.step').forEach(function(b){b.classList.remove('sel');});
 all('.touched').forEach(function(e){e.classList.remove('touched');});
 if(!on){return;}s.classList.add('sel');
 (s.getAttribute('data-sw')||'').split(' ').forEach(function(id){if(id){all('[data-id="'+id+'"]').forEach(function(e){e.classList.add('touched');});}});
 (s.getAttribute('data-g')||'').split(' ').forEach(function(id){if(id){all('[data-gid="'+id+'"]').forEach(function(e){e.classList.add('touched');});}});
 var d=document.getElementById('step-'+s.getAttribute('data-step'));if(d){d.open=true;}});});
window.addEventListener('hashchange',openHash);openHash();
window.addEventListener('beforeprint',function(){all('details').forEach(function(d){d.open=true;});});
document.documentElement.setAttribute('data-weft-ready',String(all('.sw').length));
})();
